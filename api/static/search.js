// newsquarry search page: state in the URL, results from /v1/search and /v1/quotes.
//
// The URL's query string is the whole state (q, mode, sort, page,
// date_interval, filters), so every view is shareable and back/forward work
// (pushState + popstate). The API's parameter names are the same, so the
// page's query string plus the facets to count is the API request.
//
// Every string from the index is put in the page with textContent (or as an
// attribute value), never as HTML: highlights are built from `text` and the
// `matches` offsets, not from the snippet HTML.

const FACETS = ["person", "org", "place", "speaker", "source", "quote_kind", "article", "date"];
const LIST_FACETS = ["speaker", "person", "org", "place", "source", "quote_kind", "article"];
const LABELS = {
  speaker: "Speakers", person: "People", org: "Organisations", place: "Places",
  source: "Sources", quote_kind: "Quote kind", article: "Articles", date: "Dates",
};
const SINGULAR = {
  speaker: "speaker", person: "person", org: "organisation", place: "place",
  source: "source", quote_kind: "kind", article: "article", date: "date",
};
const PAGE_KEYS = ["q", "mode", "sort", "page", "per_page", "date_interval", "date_from", "date_to", "match", "group"];
const FACET_SIZE = 30; // values fetched per facet
const SHOWN = 8; // values shown before "Show more"
const PER_PAGE = 10;

const $ = (id) => document.getElementById(id);
let inflight = null;
const expanded = new Set(); // facets whose "Show more" is open

// ---------------------------------------------------------------- state
function readState(search = location.search) {
  const p = new URLSearchParams(search);
  const state = { filters: {} };
  for (const k of PAGE_KEYS) state[k] = p.get(k) || "";
  state.mode = state.mode === "quotes" ? "quotes" : "passages";
  state.page = Math.max(1, parseInt(state.page || "1", 10) || 1);
  for (const f of FACETS) {
    const values = p.getAll(f).filter(Boolean);
    if (values.length) state.filters[f] = values;
  }
  return state;
}

function pageParams(state) {
  const p = new URLSearchParams();
  if (state.q) p.set("q", state.q);
  if (state.mode === "quotes") p.set("mode", "quotes");
  for (const f of FACETS) for (const v of state.filters[f] || []) p.append(f, v);
  for (const k of ["date_from", "date_to", "date_interval", "per_page"]) if (state[k]) p.set(k, state[k]);
  if (state.sort && state.sort !== "relevance") p.set("sort", state.sort);
  if (state.match && state.match !== "most") p.set("match", state.match);
  if (state.group === "none") p.set("group", "none"); // the page groups by article by default
  if (state.page > 1) p.set("page", String(state.page));
  return p;
}

function apiParams(state) {
  const p = pageParams(state);
  p.delete("mode");
  if (!p.has("per_page")) p.set("per_page", String(PER_PAGE));
  if (!p.has("group")) p.set("group", "article");
  for (const f of FACETS) p.append("facet", f);
  p.set("facet_size", String(FACET_SIZE));
  return p;
}

function stateUrl(state) {
  const qs = pageParams(state).toString();
  return location.pathname + (qs ? "?" + qs : "");
}

function withChange(state, change) {
  const next = structuredClone(state);
  change(next);
  return next;
}

function toggled(state, facet, value) {
  return withChange(state, (s) => {
    const values = s.filters[facet] || [];
    const i = values.findIndex((v) => fold(v) === fold(value));
    if (i >= 0) values.splice(i, 1);
    else values.push(value);
    if (values.length) s.filters[facet] = values;
    else delete s.filters[facet];
    s.page = 1;
  });
}

function isSelected(state, facet, value) {
  return (state.filters[facet] || []).some((v) => fold(v) === fold(value));
}

function fold(s) {
  return String(s).normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase().replace(/\s+/g, " ").trim();
}

function go(state) {
  history.pushState(null, "", stateUrl(state));
  load();
}

// ---------------------------------------------------------------- DOM helpers
function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

function unitOffsets(text) {
  if (!/[\uD800-\uDFFF]/.test(text)) return null;
  const map = [];
  let u = 0;
  for (const ch of text) { map.push(u); u += ch.length; }
  map.push(u);
  return map;
}

/** Text with <mark> on [start, length] matches (code points), cut around the first match. */
export function markedText(text, matches, maxLen) {
  const frag = document.createDocumentFragment();
  text = text || "";
  const map = unitOffsets(text);
  const at = (i) => (map ? map[Math.min(i, map.length - 1)] : i);
  const spans = (matches || []).map(([s, n]) => [at(s), at(s + n)]).filter(([s, e]) => e > s).sort((a, b) => a[0] - b[0]);
  let start = 0;
  let end = text.length;
  if (maxLen && text.length > maxLen) {
    const first = spans.length ? spans[0][0] : 0;
    start = Math.max(0, first - Math.floor(maxLen / 4));
    end = Math.min(text.length, start + maxLen);
    if (end === text.length) start = Math.max(0, end - maxLen);
    if (start > 0) { const sp = text.indexOf(" ", start); if (sp !== -1 && sp - start < 20) start = sp + 1; }
    if (end < text.length) { const sp = text.lastIndexOf(" ", end); if (sp > start && end - sp < 20) end = sp; }
  }
  if (start > 0) frag.append("… ");
  let pos = start;
  for (const [s, e] of spans) {
    if (s < pos || e > end) continue;
    frag.append(text.slice(pos, s), el("mark", { text: text.slice(s, e) }));
    pos = e;
  }
  frag.append(text.slice(pos, end));
  if (end < text.length) frag.append(" …");
  return frag;
}

function permalink(passageId) {
  const i = passageId.lastIndexOf("#p");
  return `/passages/${encodeURIComponent(passageId.slice(0, i))}/${passageId.slice(i + 2)}`;
}

function chip(state, facet, value, label) {
  const on = isSelected(state, facet, value);
  return el("button", {
    type: "button", class: `chip ${facet}`, "aria-pressed": String(on),
    title: `${on ? "Remove" : "Filter by"} ${SINGULAR[facet]}: ${value}`,
    "data-focus": `chip:${facet}:${value}`,
    text: label || value,
    onclick: () => go(toggled(state, facet, value)),
  });
}

// ---------------------------------------------------------------- rendering
function renderHits(state, body) {
  const list = $("hits");
  list.replaceChildren();
  list.className = `hits ${state.mode}`;
  for (const hit of body.hits) {
    list.append(state.mode === "quotes" ? quoteHit(state, hit) : passageHit(state, hit));
  }
}

function metaLine(hit, pid, withTitle) {
  const bits = [];
  if (withTitle) bits.push(el("a", { href: permalink(pid), class: "title-link", text: hit.title || hit.article_id }));
  if (hit.source) bits.push(el("span", { class: "source", text: hit.source }));
  if (hit.date) bits.push(el("time", { datetime: hit.date, text: hit.date }));
  const out = el("p", { class: "meta" });
  bits.forEach((b, i) => { if (i) out.append(" · "); out.append(b); });
  return out;
}

function passageHit(state, hit) {
  const chips = el("p", { class: "chips" });
  for (const s of hit.speakers || []) chips.append(chip(state, "speaker", s));
  const seen = new Set();
  for (const e of hit.entities || []) {
    const key = `${e.type}:${fold(e.name)}`;
    if (seen.has(key) || !LABELS[e.type]) continue;
    seen.add(key);
    chips.append(chip(state, e.type, e.name));
  }
  return el("li", { class: "hit", "data-id": hit.id }, [
    el("h2", { class: "hit-title" }, [el("a", { href: permalink(hit.id), text: hit.title || hit.article_id })]),
    metaLine(hit, hit.id, false),
    el("p", { class: "text" }, [markedText(hit.text, hit.matches, 420)]),
    chips.childNodes.length ? chips : null,
    moreLine(state, hit, "passage"),
  ]);
}

// group=article: "+ 3 more passages in this article", a link to all of them
function moreLine(state, hit, noun) {
  if (!hit.more_count) return null;
  const target = withChange(state, (s) => {
    s.filters.article = [hit.article_id]; s.group = "none"; s.page = 1;
  });
  const n = hit.more_count;
  return el("p", { class: "more" }, [el("a", {
    href: stateUrl(target), text: `+ ${n} more ${noun}${n === 1 ? "" : "s"} in this article`,
    onclick: (ev) => { ev.preventDefault(); go(target); },
  })]);
}

function quoteHit(state, hit) {
  const who = el("p", { class: "who" }, ["— "]);
  if (hit.speaker) who.append(chip(state, "speaker", hit.speaker));
  else who.append(el("span", { class: "unknown", text: "unknown speaker" }));
  const how = [hit.kind, hit.cue ? `“${hit.cue}”` : null].filter(Boolean).join(", ");
  if (how) who.append(" ", el("span", { class: "kind", text: how }));
  return el("li", { class: "hit quote", "data-id": hit.id }, [
    el("blockquote", { cite: permalink(hit.passage_id) }, [el("q", {}, [markedText(hit.text, hit.matches, 600)])]),
    who,
    metaLine(hit, hit.passage_id, true),
    moreLine(state, hit, "quotation"),
  ]);
}

function facetValueItem(state, facet, v) {
  const on = isSelected(state, facet, v.value);
  const id = `f-${facet}-${fold(v.value).replace(/[^a-z0-9]+/g, "-")}-${Math.random().toString(36).slice(2, 7)}`;
  const box = el("input", {
    type: "checkbox", id, value: v.value, checked: on, "data-focus": `facet:${facet}:${v.value}`,
    onchange: () => go(toggled(state, facet, v.value)),
  });
  return el("li", {}, [
    box,
    el("label", { for: id }, [
      el("span", { class: "v", text: v.label || v.value }),
      el("span", { class: "n", text: v.count == null ? "" : v.count.toLocaleString("en") }),
    ]),
  ]);
}

function facetValues(state, facet, data) {
  const values = [...data.values];
  for (const sel of state.filters[facet] || []) {
    if (!values.some((v) => fold(v.value) === fold(sel))) values.unshift({ value: sel, count: null, selected: true });
  }
  return values;
}

function renderFacet(state, facet, data) {
  const values = facetValues(state, facet, data);
  if (!values.length) return null;
  const headingId = `h-${facet}`;
  const list = el("ul", { class: "values", "aria-labelledby": headingId });
  const open = expanded.has(facet);
  values.forEach((v, i) => {
    const item = facetValueItem(state, facet, v);
    if (i >= SHOWN && !open && !isSelected(state, facet, v.value)) item.hidden = true;
    list.append(item);
  });
  const section = el("section", { class: "facet", "data-facet": facet }, [
    el("h3", { id: headingId, text: LABELS[facet] }),
  ]);
  const long = values.length > SHOWN || (data.more || 0) > 0;
  if (long) section.append(valueSearch(state, facet, list, headingId));
  section.append(list);
  if (values.length > SHOWN) {
    const more = el("button", {
      type: "button", class: "link more", "aria-expanded": String(open), "data-focus": `more:${facet}`,
      text: open ? "Show fewer" : `Show ${values.length - SHOWN} more`,
      onclick: () => {
        if (expanded.has(facet)) expanded.delete(facet); else expanded.add(facet);
        const fresh = renderFacet(state, facet, data);
        section.replaceWith(fresh);
        fresh.querySelector(".more")?.focus();
      },
    });
    section.append(more);
  }
  if (data.more) section.append(el("p", { class: "hint", text: `${data.more} more ${data.more === 1 ? "value" : "values"}: type above to find them` }));
  return section;
}

function valueSearch(state, facet, list, headingId) {
  let timer = null;
  let ctrl = null;
  const original = () => [...list.children];
  let saved = null;
  const input = el("input", {
    type: "search", class: "value-search", placeholder: `Find a ${SINGULAR[facet]}…`,
    "aria-label": `Find a value in ${LABELS[facet]}`, "aria-describedby": headingId,
    "data-focus": `find:${facet}`, autocomplete: "off",
  });
  const run = async () => {
    const prefix = input.value.trim();
    if (!saved) saved = original();
    if (!prefix) { list.replaceChildren(...saved); saved = null; return; }
    ctrl?.abort();
    ctrl = new AbortController();
    const p = apiParams(state);
    for (const k of ["facet", "facet_size", "page", "per_page", "sort"]) p.delete(k);
    p.set("prefix", prefix);
    p.set("size", "20");
    if (state.mode === "quotes") p.set("mode", "quotes");
    try {
      const r = await fetch(`/v1/facets/${facet}?${p}`, { signal: ctrl.signal, headers: { Accept: "application/json" } });
      const body = await r.json();
      if (!r.ok) throw new Error(body.detail || `HTTP ${r.status}`);
      const items = body.values.map((v) => facetValueItem(state, facet, v));
      list.replaceChildren(...(items.length ? items : [el("li", { class: "none", text: "No match" })]));
    } catch (err) {
      if (err.name !== "AbortError") list.replaceChildren(el("li", { class: "none", text: err.message }));
    }
  };
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 150); });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && input.value) { input.value = ""; run(); ev.preventDefault(); }
    if (ev.key === "Enter") { ev.preventDefault(); clearTimeout(timer); run().then(() => list.querySelector("input")?.focus()); }
  });
  return input;
}

function renderHistogram(state, data) {
  const box = $("histogram");
  box.replaceChildren();
  const interval = state.date_interval || "month";
  const select = el("select", { id: "interval", "aria-label": "Date bucket size", "data-focus": "interval" },
    ["year", "month", "day"].map((i) => el("option", { value: i, selected: i === interval, text: i })));
  select.addEventListener("change", () => go(withChange(state, (s) => {
    s.date_interval = select.value === "month" ? "" : select.value;
    delete s.filters.date;
    s.page = 1;
  })));
  box.append(el("div", { class: "histo-head" }, [el("h3", { id: "h-date", text: "Dates" }), select]));
  const values = facetValues(state, "date", data || { values: [] }).filter((v) => v.count != null || v.selected);
  if (!values.length) {
    box.append(el("p", { class: "hint", text: "No dated passages" }));
    return;
  }
  values.sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  const max = Math.max(1, ...values.map((v) => v.count || 0));
  const bars = el("div", { class: "bars", role: "group", "aria-labelledby": "h-date" });
  for (const v of values) {
    const on = isSelected(state, "date", v.value);
    const bar = el("span", { class: "bar" });
    bar.style.setProperty("--h", `${Math.max(4, Math.round(((v.count || 0) / max) * 100))}%`);
    bars.append(el("button", {
      type: "button", class: "bucket", "aria-pressed": String(on), "data-focus": `date:${v.value}`,
      title: `${v.value}: ${v.count ?? "?"}`, "aria-label": `${v.value}: ${v.count ?? "selected"}`,
      onclick: () => go(toggled(state, "date", v.value)),
    }, [el("span", { class: "bar-wrap" }, [bar]), el("span", { class: "count", text: v.count ?? "" }), el("span", { class: "label", text: v.value })]));
  }
  box.append(bars);
  if (data?.more) box.append(el("p", { class: "hint", text: `${data.more} more ${interval} buckets not shown: pick a larger bucket or narrow the search` }));
}

function renderFacets(state, body) {
  const facets = body.facets || {};
  const holder = $("facet-list");
  holder.replaceChildren();
  renderHistogram(state, facets.date);
  for (const f of LIST_FACETS) {
    if (state.mode === "passages" && f === "quote_kind" && !(facets[f]?.values || []).length) continue;
    const section = facets[f] ? renderFacet(state, f, facets[f]) : null;
    if (section) holder.append(section);
  }
  const active = $("active-filters");
  active.replaceChildren();
  let n = 0;
  for (const f of FACETS) {
    for (const v of state.filters[f] || []) {
      n += 1;
      active.append(el("button", {
        type: "button", class: "chip active", "data-focus": `active:${f}:${v}`,
        "aria-label": `Remove ${SINGULAR[f]} ${v}`, onclick: () => go(toggled(state, f, v)),
      }, [el("span", { class: "k", text: `${SINGULAR[f]}:` }), el("span", { text: v }), el("span", { "aria-hidden": "true", text: "×" })]));
    }
  }
  if (n > 1) {
    active.append(el("button", {
      type: "button", class: "link", text: "Clear all",
      onclick: () => go(withChange(state, (s) => { s.filters = {}; s.page = 1; })),
    }));
  }
  $("selected-count").textContent = n ? `(${n} selected)` : "";
}

function renderPager(state, body) {
  const nav = $("pager");
  nav.replaceChildren();
  const last = body.total_pages || 1;
  if (last <= 1) return;
  const link = (page, text, extra = {}) => {
    const target = withChange(state, (s) => { s.page = page; });
    return el("a", {
      href: stateUrl(target), text, ...extra,
      onclick: (ev) => {
        if (ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
        ev.preventDefault();
        go(target);
        $("main").focus();
      },
    });
  };
  if (state.page > 1) nav.append(link(state.page - 1, "← Previous", { rel: "prev", class: "prev" }));
  const from = Math.max(1, state.page - 2);
  const to = Math.min(last, state.page + 2);
  const pages = el("span", { class: "pages" });
  for (let i = from; i <= to; i += 1) {
    pages.append(i === state.page ? el("span", { class: "current", "aria-current": "page", text: String(i) }) : link(i, String(i)));
  }
  nav.append(pages);
  if (state.page < last && body.links?.next) nav.append(link(state.page + 1, "Next →", { rel: "next", class: "next" }));
}

function renderChrome(state) {
  $("q").value = state.q;
  $("sort").value = state.sort || "relevance";
  $("match").value = state.match || "most";
  $("group").checked = state.group !== "none";
  const base = withChange(state, (s) => { s.page = 1; });
  for (const mode of ["passages", "quotes"]) {
    const a = $(`mode-${mode}`);
    a.href = stateUrl(withChange(base, (s) => { s.mode = mode; }));
    if (state.mode === mode) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  document.title = `${state.q ? state.q + " · " : ""}${state.mode === "quotes" ? "quotes" : "search"} · newsquarry`;
}

function renderStatus(state, body) {
  const noun = state.mode === "quotes" ? "quotation" : "passage";
  const total = body.total;
  const arts = body.total_articles || 0;
  const inArticles = body.request?.group === "article" ? ` in ${arts.toLocaleString("en")} article${arts === 1 ? "" : "s"}` : "";
  const text = total
    ? `${total.toLocaleString("en")} ${noun}${total === 1 ? "" : "s"}${inArticles}${body.total_pages > 1 ? ` · page ${state.page} of ${body.total_pages}` : ""}`
    : `No ${noun}s match`;
  $("status").textContent = text;
  $("status").dataset.total = String(total);
  const sug = $("suggestion");
  if (body.suggestion && body.suggestion !== state.q) {
    const target = withChange(state, (s) => { s.q = body.suggestion; s.page = 1; });
    const n = body.suggestion_total;
    sug.replaceChildren("Did you mean ", el("a", {
      href: stateUrl(target), text: body.suggestion,
      onclick: (ev) => { ev.preventDefault(); go(target); },
    }), n == null ? "?" : `? (${n.toLocaleString("en")})`);
    sug.hidden = false;
  } else {
    sug.hidden = true;
  }
}

// readings of the query the API offers (a name that is a facet value): links, never applied
function renderInterpretations(state, body) {
  const list = $("interpretations");
  const items = (body.interpretations || []).map((it) => {
    const target = withChange(state, (s) => {
      s.q = it.q; s.mode = it.mode; s.page = 1; s.filters[it.facet] = [it.value];
    });
    return el("li", {}, [el("a", {
      href: stateUrl(target), text: `${it.label} (${it.count.toLocaleString("en")})`,
      onclick: (ev) => { ev.preventDefault(); go(target); },
    })]);
  });
  list.replaceChildren(...items);
  list.hidden = !items.length;
}

function attr(value) {
  return String(value).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Code to paste into another page for this search: the widget and the /embed iframe. */
function renderEmbedCode(state) {
  const origin = location.origin;
  const attrs = [];
  if (state.q) attrs.push(`q="${attr(state.q)}"`);
  if (state.mode === "quotes") attrs.push('mode="quotes"');
  if (state.sort && state.sort !== "relevance") attrs.push(`sort="${attr(state.sort)}"`);
  const filters = new URLSearchParams();
  for (const f of FACETS) for (const v of state.filters[f] || []) filters.append(f, v);
  if ([...filters.keys()].length) attrs.push(`params="${attr(filters.toString())}"`);
  attrs.push('per-page="5"');
  $("embed-widget").textContent =
    `<script src="${origin}/widget.js" defer></script>\n<newsquarry-results ${attrs.join(" ")}></newsquarry-results>`;
  const embed = pageParams(withChange(state, (s) => { s.page = 1; }));
  embed.delete("date_interval");
  if (embed.get("mode") !== "quotes") embed.delete("mode");
  embed.set("per_page", "5");
  $("embed-iframe").textContent =
    `<iframe src="${attr(`${origin}/embed?${embed}`)}" width="600" height="480" style="border:0" title="newsquarry results"></iframe>`;
}

function showError(detail) {
  const box = $("error");
  box.textContent = detail;
  box.hidden = false;
}

// ---------------------------------------------------------------- loading
async function load() {
  const state = readState();
  const canonical = stateUrl(state);
  if (canonical !== location.pathname + location.search) history.replaceState(null, "", canonical);
  renderChrome(state);
  const focusKey = document.activeElement?.dataset?.focus;
  inflight?.abort();
  const ctrl = new AbortController();
  inflight = ctrl;
  document.body.setAttribute("aria-busy", "true");
  const endpoint = state.mode === "quotes" ? "/v1/quotes" : "/v1/search";
  let body;
  try {
    const r = await fetch(`${endpoint}?${apiParams(state)}`, { signal: ctrl.signal, headers: { Accept: "application/json" } });
    body = await r.json().catch(() => ({}));
    if (!r.ok) {
      const detail = body.detail || `HTTP ${r.status}`;
      const fields = Object.entries(body.errors || {})
        .filter(([, v]) => v.join(" ") !== detail)
        .map(([k, v]) => `${k}: ${v.join(" ")}`).join("; ");
      throw new Error(`${body.title || "Error"}: ${detail}${fields ? ` (${fields})` : ""}`);
    }
  } catch (err) {
    if (err.name === "AbortError") return;
    for (const id of ["hits", "pager", "histogram", "facet-list"]) $(id).replaceChildren();
    $("status").textContent = "";
    $("suggestion").hidden = true;
    $("interpretations").hidden = true;
    showError(err.message);
    document.body.removeAttribute("aria-busy");
    return;
  }
  if (ctrl !== inflight) return;
  $("error").hidden = true;
  renderStatus(state, body);
  renderInterpretations(state, body);
  renderHits(state, body);
  renderFacets(state, body);
  renderPager(state, body);
  renderEmbedCode(state);
  document.body.removeAttribute("aria-busy");
  document.body.dataset.loaded = stateUrl(state);
  if (focusKey) {
    const again = [...document.querySelectorAll("[data-focus]")].find((n) => n.dataset.focus === focusKey);
    again?.focus();
  }
}

function init() {
  $("search-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const state = readState();
    go(withChange(state, (s) => { s.q = $("q").value.trim(); s.page = 1; }));
  });
  $("sort").addEventListener("change", () => go(withChange(readState(), (s) => { s.sort = $("sort").value; s.page = 1; })));
  $("match").addEventListener("change", () => go(withChange(readState(), (s) => { s.match = $("match").value; s.page = 1; })));
  $("group").addEventListener("change", () => go(withChange(readState(), (s) => { s.group = $("group").checked ? "" : "none"; s.page = 1; })));
  for (const mode of ["passages", "quotes"]) {
    $(`mode-${mode}`).addEventListener("click", (ev) => {
      if (ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
      ev.preventDefault();
      go(withChange(readState(), (s) => { s.mode = mode; s.page = 1; }));
    });
  }
  const box = $("facets-box");
  if (window.matchMedia("(max-width: 760px)").matches) box.open = false;
  window.addEventListener("popstate", load);
  load();
}

init();
