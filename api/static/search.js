// newsquarry search page: state in the URL, results from /v1/search and /v1/quotes.
//
// The URL's query string is the whole state (q, mode, sort, page,
// date_interval, filters), so every view is shareable and back/forward work
// (pushState + popstate). The API's parameter names are the same, so the
// page's query string plus the facets to count is the API request.
//
// Every string from the index is put in the page with textContent (or as an
// attribute value), never as HTML: highlights are built from `text` and the
// `matches` offsets, not from the snippet HTML. Every string from an article sits
// in its own bidi isolate (<bdi>, or dir="auto" on a block), so a right-to-left
// override inside it cannot reorder the page's own words around it.

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
const PAGE_KEYS = ["q", "mode", "sort", "page", "per_page", "date_interval", "date_from", "date_to", "match", "group", "retrieval"];
const FACET_SIZE = 30; // values fetched per facet
const SHOWN = 8; // values shown before "Show more"
const PER_PAGE = 10;
const RETRY_DELAYS = [5, 10, 20, 30]; // seconds between automatic retries when the server is down

const $ = (id) => document.getElementById(id);
let inflight = null;
let retry = { timer: null, tick: null, attempt: 0 };
let focusHeading = false; // move focus to the results heading once the next search is shown
const expanded = new Set(); // facets whose "Show more" is open

// ---------------------------------------------------------------- state
function readState(search = location.search) {
  const p = new URLSearchParams(search);
  const state = { filters: {} };
  for (const k of PAGE_KEYS) state[k] = p.get(k) || "";
  state.mode = state.mode === "quotes" ? "quotes" : "passages";
  const sorts = [...$("sort").options].map((o) => o.value);
  if (!sorts.includes(state.sort)) state.sort = ""; // an unknown sort in a URL: relevance
  const retrievals = [...$("retrieval").options].map((o) => o.value);
  if (!retrievals.includes(state.retrieval)) state.retrieval = ""; // unknown: automatic
  state.page = Math.max(1, parseInt(state.page || "1", 10) || 1);
  for (const f of FACETS) {
    const values = p.getAll(f).filter(Boolean);
    if (values.length) state.filters[f] = values;
  }
  state.all_of = [...new Set(p.getAll("all_of"))].filter((f) => FACETS.includes(f) && f !== "date");
  return state;
}

// Passages are shown one per article by default (a page of different stories); quotations
// all of them, as the API does (group=none): a journalist reading what someone said wants
// every quotation, not one per article behind "+ N more".
function defaultGroup(mode) {
  return mode === "quotes" ? "none" : "article";
}

function groupOf(state) {
  return state.group || defaultGroup(state.mode);
}

function pageParams(state) {
  const p = new URLSearchParams();
  if (state.q) p.set("q", state.q);
  if (state.mode === "quotes") p.set("mode", "quotes");
  for (const f of FACETS) for (const v of state.filters[f] || []) p.append(f, v);
  for (const f of state.all_of || []) if ((state.filters[f] || []).length) p.append("all_of", f);
  for (const k of ["date_from", "date_to", "date_interval", "per_page"]) if (state[k]) p.set(k, state[k]);
  if (state.sort && state.sort !== "relevance") p.set("sort", state.sort);
  if (state.match && state.match !== "most") p.set("match", state.match);
  if (state.retrieval && state.retrieval !== "auto") p.set("retrieval", state.retrieval);
  if (groupOf(state) !== defaultGroup(state.mode)) p.set("group", groupOf(state));
  if (state.page > 1) p.set("page", String(state.page));
  return p;
}

function apiParams(state) {
  const p = pageParams(state);
  p.delete("mode");
  if (!p.has("per_page")) p.set("per_page", String(PER_PAGE));
  p.set("group", groupOf(state));
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
    const given = s.filters[facet] || [];
    const values = given.filter((v) => !selects(facet, v, value));
    if (values.length === given.length) values.push(value);
    if (values.length) s.filters[facet] = values;
    else delete s.filters[facet];
    s.page = 1;
  });
}

// A filter value selects a facet value it folds to, and for names one it is a run of the
// words of ("Maduro" selects "Nicolás Maduro"), as the API filters and marks them.
const NAME_FACETS = ["person", "org", "place", "speaker"];
function selects(facet, given, value) {
  const g = fold(given), v = fold(value);
  return g === v || (NAME_FACETS.includes(facet) && g !== "" && ` ${v} `.includes(` ${g} `));
}

function isSelected(state, facet, value) {
  return (state.filters[facet] || []).some((v) => selects(facet, v, value));
}

// "Any of" (the default: a facet's values are alternatives) or "all of" (every value must
// hold: passages naming both NATO and the UN), for a facet with two values or more selected.
function conjunctionToggle(state, facet) {
  const all = (state.all_of || []).includes(facet);
  const choice = (on, label, title) => el("button", {
    type: "button", class: "link", "aria-pressed": String(on === all), title,
    "data-focus": `allof:${facet}:${on}`, text: label,
    onclick: () => {
      if (on === all) return;
      go(withChange(readState(), (s) => {
        s.all_of = (s.all_of || []).filter((f) => f !== facet);
        if (on) s.all_of.push(facet);
        s.page = 1;
      }));
    },
  });
  return el("p", { class: "conjunction", role: "group", "aria-label": `How the selected ${LABELS[facet]} combine` }, [
    el("span", { text: "Match " }),
    choice(false, "any of", "Passages with at least one of the selected values"),
    el("span", { text: " · " }),
    choice(true, "all of", "Passages with every selected value"),
  ]);
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

/** Article text in its own bidi isolate. */
function bdi(text, attrs = {}) {
  return el("bdi", { ...attrs, text });
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
  const inner = el("bdi");
  let pos = start;
  for (const [s, e] of spans) {
    if (s < pos || e > end) continue;
    inner.append(text.slice(pos, s), el("mark", { text: text.slice(s, e) }));
    pos = e;
  }
  inner.append(text.slice(pos, end));
  frag.append(inner);
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
    // the search in the URL now, not the one this chip was drawn for: a click while the
    // next search loads keeps its query and filters
    onclick: () => go(toggled(readState(), facet, value)),
  }, [bdi(label || value)]);
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
  if (withTitle) bits.push(el("a", { href: permalink(pid), class: "title-link" }, [bdi(hit.title || hit.article_id)]));
  if (hit.source) bits.push(bdi(hit.source, { class: "source" }));
  if (hit.date) bits.push(el("bdi", {}, [el("time", { datetime: hit.date, text: hit.date })]));
  // syndication: other articles carrying the same story (wire copy republished)
  if (hit.copies) bits.push(el("span", { class: "copies", title: "The same story, republished or lightly edited", text: `same story in ${hit.copies} other article${hit.copies === 1 ? "" : "s"}` }));
  // a search by meaning: why this hit is here (its words, its meaning, or both)
  const why = { words: "matched by words", meaning: "matched by meaning", both: "matched by words and meaning" }[hit.matched_by];
  if (why) bits.push(el("span", { class: "matched-by", text: why }));
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
    el("h2", { class: "hit-title", dir: "auto" }, [el("a", { href: permalink(hit.id), text: hit.title || hit.article_id })]),
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
  if (hit.kind || hit.cue) {
    const how = el("span", { class: "kind" }, [hit.kind || ""]);
    if (hit.cue) how.append(hit.kind ? ", “" : "“", bdi(hit.cue), "”");
    who.append(" ", how);
  }
  return el("li", { class: "hit quote", "data-id": hit.id }, [
    el("blockquote", { cite: permalink(hit.passage_id) }, [el("q", {}, [markedText(hit.text, hit.matches, 600)])]),
    who,
    metaLine(hit, hit.passage_id, true),
    alsoLine(hit),
    moreLine(state, hit, "quotation"),
  ]);
}

// a quotation several articles carry (near-duplicates): "Also in 3 other articles, first
// seen 2020-03-01 in Wire", linking to the first-seen copy; its cluster's JSON is one GET away
function alsoLine(hit) {
  const seen = hit.first_seen;
  if (!seen || !(hit.cluster_articles > 1)) return null;
  const n = hit.cluster_articles - 1;
  const out = el("p", { class: "also", "data-cluster": hit.cluster }, [
    `Also in ${n.toLocaleString("en")} other article${n === 1 ? "" : "s"}, first seen `,
  ]);
  const pid = seen.id.slice(0, seen.id.lastIndexOf("#q"));
  const first = el("a", { href: permalink(pid), class: "first-seen" }, []);
  if (seen.date) first.append(el("time", { datetime: seen.date, text: seen.date }));
  if (seen.source) first.append(seen.date ? " in " : "in ", bdi(seen.source));
  if (!seen.date && !seen.source) first.append(bdi(seen.title || seen.article_id));
  out.append(first);
  return out;
}

function facetValueItem(state, facet, v) {
  const on = isSelected(state, facet, v.value);
  const id = `f-${facet}-${fold(v.value).replace(/[^a-z0-9]+/g, "-")}-${Math.random().toString(36).slice(2, 7)}`;
  const box = el("input", {
    type: "checkbox", id, value: v.value, checked: on, "data-focus": `facet:${facet}:${v.value}`,
    onchange: () => go(toggled(readState(), facet, v.value)), // (see chip)
  });
  return el("li", {}, [
    box,
    el("label", { for: id }, [
      el("span", { class: "v", dir: "auto", text: v.label || v.value }),
      el("span", { class: "n", text: v.count == null ? "" : v.count.toLocaleString("en") }),
    ]),
  ]);
}

function facetValues(state, facet, data) {
  const values = [...data.values];
  for (const sel of state.filters[facet] || []) {
    if (!values.some((v) => selects(facet, sel, v.value))) values.unshift({ value: sel, count: null, selected: true });
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
  if (facet !== "date" && ((state.filters[facet] || []).length > 1 || (state.all_of || []).includes(facet))) {
    section.append(conjunctionToggle(state, facet));
  }
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
  // an undated archive (or results without dates): no box of dates at all
  box.hidden = !values.length;
  if (!values.length) return;
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
      }, [el("span", { class: "k", text: `${SINGULAR[f]}:` }), bdi(v), el("span", { "aria-hidden": "true", text: "×" })]));
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

function pageLink(state, page, text, extra = {}) {
  const target = withChange(state, (s) => { s.page = page; });
  return el("a", {
    href: stateUrl(target), text, ...extra,
    onclick: (ev) => {
      if (ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
      ev.preventDefault();
      focusHeading = true;
      go(target);
    },
  });
}

/** The last page a reader can reach: the result's pages, within the server's depth limit. */
function lastPage(state, body) {
  const last = body.total_pages || 1;
  return state.page <= last && !body.links?.next ? Math.min(last, state.page) : last;
}

function renderPager(state, body) {
  const nav = $("pager");
  nav.replaceChildren();
  const last = lastPage(state, body);
  if (last <= 1 && state.page <= 1) return;
  const page = Math.min(state.page, last); // past the end: the pager is the last page's
  if (page > 1 || state.page > last) nav.append(pageLink(state, Math.max(1, page - (state.page > last ? 0 : 1)), "← Previous", { rel: "prev", class: "prev" }));
  const from = Math.max(1, page - 2);
  const to = Math.min(last, page + 2);
  const pages = el("span", { class: "pages" });
  for (let i = from; i <= to; i += 1) {
    pages.append(i === state.page ? el("span", { class: "current", "aria-current": "page", text: String(i) }) : pageLink(state, i, String(i)));
  }
  nav.append(pages);
  if (state.page < last && body.links?.next) nav.append(pageLink(state, state.page + 1, "Next →", { rel: "next", class: "next" }));
}

function renderChrome(state) {
  $("q").value = state.q;
  $("sort").value = state.sort || "relevance";
  $("match").value = state.match || "most";
  $("retrieval").value = state.retrieval || "auto";
  $("group").checked = groupOf(state) === "article";
  const base = withChange(state, (s) => { s.page = 1; });
  for (const mode of ["passages", "quotes"]) {
    const a = $(`mode-${mode}`);
    a.href = stateUrl(withChange(base, (s) => { s.mode = mode; s.group = ""; }));
    if (state.mode === mode) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const noun = state.mode === "quotes" ? "Quotations" : "Passages";
  // the query comes from the URL (a shared link): isolated like article text
  if (state.q) $("results-heading").replaceChildren(`${noun} matching “`, bdi(state.q), "”");
  else $("results-heading").textContent = `All ${noun.toLowerCase()}`;
  document.title = `${state.q ? state.q + " · " : ""}${state.mode === "quotes" ? "quotes" : "search"} · newsquarry`;
}

function renderStatus(state, body) {
  const noun = state.mode === "quotes" ? "quotation" : "passage";
  const total = body.total;
  const status = $("status");
  const last = lastPage(state, body);
  const arts = body.total_articles || 0;
  const inArticles = body.request?.group === "article" ? ` in ${arts.toLocaleString("en")} article${arts === 1 ? "" : "s"}` : "";
  if (!total) {
    status.textContent = `No ${noun}s match`;
  } else if (state.page > last) {
    // a page past the end (an old link, a hand-edited URL): say so and offer the last page
    status.replaceChildren(
      `${total.toLocaleString("en")} ${noun}${total === 1 ? "" : "s"}${inArticles} · there is no page ${state.page}: `,
      pageLink(state, last, `go to page ${last}, the last`, { id: "last-page" }),
    );
  } else {
    status.textContent = `${total.toLocaleString("en")} ${noun}${total === 1 ? "" : "s"}${inArticles}${body.total_pages > 1 ? ` · page ${state.page} of ${last}` : ""}`;
  }
  status.dataset.total = String(total);
  const sug = $("suggestion");
  if (body.suggestion && body.suggestion !== state.q) {
    const target = withChange(state, (s) => { s.q = body.suggestion; s.page = 1; });
    const n = body.suggestion_total;
    sug.replaceChildren("Did you mean ", el("a", {
      href: stateUrl(target),
      onclick: (ev) => { ev.preventDefault(); focusHeading = true; go(target); },
    }, [bdi(body.suggestion)]), n == null ? "?" : `? (${n.toLocaleString("en")})`);
    sug.hidden = false;
  } else {
    sug.hidden = true;
  }
  renderHelp(state, body);
}

/** What to try when nothing matches: each suggestion is a link to that search. */
function renderHelp(state, body) {
  const help = $("help");
  help.replaceChildren();
  help.hidden = body.total > 0;
  if (body.total > 0) return;
  const tries = [];
  const link = (target, ...parts) => el("a", {
    href: stateUrl(target),
    onclick: (ev) => { ev.preventDefault(); focusHeading = true; go(target); },
  }, parts);
  const filters = Object.entries(state.filters).flatMap(([f, vs]) => vs.map((v) => [f, v]));
  const dated = state.date_from || state.date_to;
  if (filters.length || dated) {
    const none = withChange(state, (s) => { s.filters = {}; s.date_from = ""; s.date_to = ""; s.page = 1; });
    const named = filters.map(([f, v]) => [`${SINGULAR[f]}: `, bdi(v)]).concat(dated ? [["dates"]] : []);
    tries.push([link(none, "Search without the filters"), " (", ...named.flatMap((n, i) => (i ? [", ", ...n] : n)), ")"]);
    if (filters.length > 1) {
      for (const [f, v] of filters) tries.push([link(toggled(state, f, v), `Remove ${SINGULAR[f]}: `, bdi(v))]);
    }
  }
  // "all" demands every word; the default ("most") needs one word that is not a stop word
  if (state.q.trim() && state.match === "all") {
    const most = withChange(state, (s) => { s.match = "most"; s.page = 1; });
    tries.push([link(most, "Find passages with only some of the words")]);
  }
  const other = state.mode === "quotes" ? "passages" : "quotes";
  tries.push([link(withChange(state, (s) => { s.mode = other; s.page = 1; }), `Search ${other === "quotes" ? "quotations" : "passages"} instead`)]);
  help.append(el("p", { text: "Try:" }), el("ul", {}, tries.map((parts) => el("li", {}, parts))));
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

function text(value) {
  return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
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
  for (const f of state.all_of || []) if ((state.filters[f] || []).length) filters.append("all_of", f);
  if ([...filters.keys()].length) attrs.push(`params="${attr(filters.toString())}"`);
  attrs.push('per-page="5"');
  const page = `${origin}${stateUrl(withChange(state, (s) => { s.page = 1; }))}`;
  const label = state.q ? `Search “${state.q}” on newsquarry` : "Search on newsquarry";
  $("embed-widget").textContent =
    `<script src="${origin}/widget.js" defer></script>\n<newsquarry-results ${attrs.join(" ")}>\n  <a href="${attr(page)}">${text(label)}</a>\n</newsquarry-results>`;
  const embed = pageParams(withChange(state, (s) => { s.page = 1; }));
  embed.delete("date_interval");
  if (embed.get("mode") !== "quotes") embed.delete("mode");
  embed.set("per_page", "5");
  $("embed-iframe").textContent =
    `<iframe src="${attr(`${origin}/embed?${embed}`)}" width="600" height="480" style="border:0" title="newsquarry results"></iframe>`;
  $("embed-code").hidden = false;
}

/** Feed links for this search (Atom and JSON Feed): the same query and filters, newest first. */
function renderFollow(state) {
  const p = pageParams(withChange(state, (s) => { s.page = 1; }));
  p.delete("mode");
  p.delete("group");
  p.delete("sort");
  const endpoint = state.mode === "quotes" ? "/v1/quotes" : "/v1/search";
  for (const fmt of ["atom", "jsonfeed"]) {
    const q = new URLSearchParams(p);
    q.set("format", fmt);
    $(`follow-${fmt}`).href = `${endpoint}?${q}`;
  }
  $("follow").hidden = false;
}

const CO_FACETS = ["speaker", "person", "org", "place"];
let coInflight = null;

/** With a person, organisation, place or speaker selected: who else appears in its passages. */
async function renderCooccur(state) {
  const box = $("cooccur");
  coInflight?.abort();
  const chosen = CO_FACETS.flatMap((f) => (state.filters[f] || []).map((v) => [f, v]));
  if (!chosen.length || state.mode === "quotes") { box.hidden = true; return; }
  const p = pageParams(withChange(state, (s) => { s.page = 1; }));
  for (const k of ["mode", "group", "sort", "per_page", "date_interval"]) p.delete(k);
  for (const f of CO_FACETS) p.append("facet", f);
  p.set("size", "6");
  const ctrl = new AbortController();
  coInflight = ctrl;
  let body;
  try {
    const r = await fetch(`/v1/cooccurrence?${p}`, { signal: ctrl.signal, headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    body = await r.json();
  } catch (err) {
    if (ctrl === coInflight) box.hidden = true; // an extra: the results above still stand
    return;
  }
  if (ctrl !== coInflight) return;
  const rows = [];
  for (const f of CO_FACETS) {
    const values = body.facets[f]?.article || [];
    if (!values.length) continue;
    const links = values.map((v) => {
      // passages naming both: the selection stays, the other name joins the query as a field
      const target = withChange(state, (s) => {
        s.q = `${s.q ? s.q + " " : ""}${f}:"${v.value.replace(/"/g, "")}"`; s.page = 1;
      });
      return el("a", {
        href: stateUrl(target), title: `${v.count} article${v.count === 1 ? "" : "s"} with both`,
        onclick: (ev) => { ev.preventDefault(); focusHeading = true; go(target); },
      }, [bdi(v.value), ` (${v.count})`]);
    });
    rows.push(el("dt", { text: LABELS[f] }), el("dd", {}, links));
  }
  // values of one facet are alternatives ("or") unless it is "all of"; facets combine with "and"
  const groups = CO_FACETS.filter((f) => (state.filters[f] || []).length).map((f) => {
    const joiner = (state.all_of || []).includes(f) ? " and " : " or ";
    return state.filters[f].flatMap((v, i) => (i ? [joiner, bdi(v)] : [bdi(v)]));
  });
  $("cooccur-subject").replaceChildren(...groups.flatMap((g, i) => (i ? [" and ", ...g] : g)));
  $("cooccur-list").replaceChildren(rows.length ? el("dl", {}, rows) : el("p", { text: "Nobody else in these articles." }));
  box.hidden = false;
}

function clearEmbedCode() {
  $("embed-code").hidden = true;
  $("embed-code").open = false;
  $("embed-widget").textContent = "";
  $("embed-iframe").textContent = "";
}

function stopRetry() {
  clearTimeout(retry.timer);
  clearInterval(retry.tick);
  retry.timer = retry.tick = null;
}

/** A failed search: say what happened in words; retry by itself when the server may come back. */
function showError(problem) {
  const box = $("error");
  stopRetry();
  box.replaceChildren();
  clearEmbedCode(); // the box must never offer a snippet for another search than the one shown
  const stale = $("hits").childElementCount > 0;
  if (!problem.retry) {
    retry.attempt = 0;
    box.append(el("p", { text: problem.message }));
    box.hidden = false;
    return;
  }
  const wait = problem.after || RETRY_DELAYS[Math.min(retry.attempt, RETRY_DELAYS.length - 1)];
  retry.attempt += 1;
  let left = wait;
  const countdown = el("span", { class: "countdown", text: `Retrying in ${left} s…` });
  box.append(
    el("p", {}, [el("strong", { text: problem.message }), " ", countdown]),
    stale ? el("p", { class: "stale-note", text: "The results below are from the last search that worked." }) : null,
    el("p", {}, [el("button", { type: "button", id: "retry", text: "Retry now", onclick: () => { stopRetry(); load(); } })]),
  );
  $("hits").classList.toggle("stale", stale);
  box.hidden = false;
  retry.tick = setInterval(() => {
    left = Math.max(0, left - 1);
    countdown.textContent = left ? `Retrying in ${left} s…` : "Retrying…";
  }, 1000);
  retry.timer = setTimeout(() => { stopRetry(); load(); }, wait * 1000);
}

/** A failed fetch or answer -> {message, retry, after} in words a reader understands. */
async function problemOf(response, err) {
  if (!response) {
    return { message: "The search service is not reachable.", retry: true };
  }
  const body = await response.json().catch(() => ({}));
  const detail = body.detail || `HTTP ${response.status}`;
  if (response.status === 429 || response.status >= 500) {
    const after = parseInt(response.headers.get("Retry-After") || "", 10);
    const what = response.status === 429 ? "The search service is busy" : "The search service had a problem";
    return { message: `${what} (${response.status}${body.detail ? `: ${body.detail}` : ""}).`, retry: true, after: after > 0 ? Math.min(after, 120) : null };
  }
  const fields = Object.entries(body.errors || {})
    .filter(([, v]) => v.join(" ") !== detail)
    .map(([k, v]) => `${k}: ${v.join(" ")}`).join("; ");
  return { message: `${body.title || "Error"}: ${detail}${fields ? ` (${fields})` : ""}`, retry: false, status: response.status, err };
}

// ---------------------------------------------------------------- loading
async function load() {
  const state = readState();
  const canonical = stateUrl(state);
  if (canonical !== location.pathname + location.search) history.replaceState(null, "", canonical);
  stopRetry();
  renderChrome(state);
  const focusKey = document.activeElement?.dataset?.focus;
  inflight?.abort();
  const ctrl = new AbortController();
  inflight = ctrl;
  document.body.setAttribute("aria-busy", "true");
  // the heading already names the new search: the count below it must not be the last one's
  $("status").textContent = "Searching…";
  $("status").dataset.total = "";
  $("hits").classList.add("stale");
  const endpoint = state.mode === "quotes" ? "/v1/quotes" : "/v1/search";
  let body;
  let response = null;
  try {
    response = await fetch(`${endpoint}?${apiParams(state)}`, { signal: ctrl.signal, headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    body = await response.json();
  } catch (err) {
    if (err.name === "AbortError" || ctrl !== inflight) return;
    const problem = await problemOf(response, err);
    if (ctrl !== inflight) return;
    if (!problem.retry) {
      // the search itself is wrong (a query error): no results belong to it
      for (const id of ["hits", "pager", "histogram", "facet-list"]) $(id).replaceChildren();
      $("status").textContent = "";
      $("status").dataset.total = "";
      $("suggestion").hidden = true;
      $("interpretations").hidden = true;
      $("help").hidden = true;
      $("follow").hidden = true;
      $("cooccur").hidden = true;
    }
    else {
      $("status").textContent = ""; // the error box says what is shown below and why
    }
    showError(problem);
    document.body.removeAttribute("aria-busy");
    document.body.dataset.failed = stateUrl(state);
    if (focusHeading) { focusHeading = false; $("results-heading").focus(); }
    return;
  }
  if (ctrl !== inflight) return;
  retry.attempt = 0;
  $("error").hidden = true;
  $("error").replaceChildren();
  $("hits").classList.remove("stale");
  renderStatus(state, body);
  renderInterpretations(state, body);
  renderHits(state, body);
  renderFacets(state, body);
  renderPager(state, body);
  // embedding results only where there are some; a feed of a search with no match yet is
  // what following is for (a story not written yet), so it stays
  if (body.total) renderEmbedCode(state);
  else clearEmbedCode();
  renderFollow(state);
  renderCooccur(state);
  document.body.removeAttribute("aria-busy");
  delete document.body.dataset.failed;
  document.body.dataset.loaded = stateUrl(state);
  if (focusHeading) {
    focusHeading = false;
    $("results-heading").focus(); // a new search: the reader goes on from its heading
  } else if (focusKey) {
    const again = [...document.querySelectorAll("[data-focus]")].find((n) => n.dataset.focus === focusKey);
    again?.focus();
  }
}

function init() {
  $("search-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const state = readState();
    focusHeading = true;
    go(withChange(state, (s) => { s.q = $("q").value.trim(); s.page = 1; }));
  });
  $("sort").addEventListener("change", () => go(withChange(readState(), (s) => { s.sort = $("sort").value; s.page = 1; })));
  $("match").addEventListener("change", () => go(withChange(readState(), (s) => { s.match = $("match").value; s.page = 1; })));
  $("retrieval").addEventListener("change", () => go(withChange(readState(), (s) => { s.retrieval = $("retrieval").value; s.page = 1; })));
  $("group").addEventListener("change", () => go(withChange(readState(), (s) => { s.group = $("group").checked ? "article" : "none"; s.page = 1; })));
  for (const mode of ["passages", "quotes"]) {
    $(`mode-${mode}`).addEventListener("click", (ev) => {
      if (ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
      ev.preventDefault();
      go(withChange(readState(), (s) => { s.mode = mode; s.group = ""; s.page = 1; }));
    });
  }
  const box = $("facets-box");
  if (window.matchMedia("(max-width: 760px)").matches) box.open = false;
  window.addEventListener("popstate", load);
  load();
}

init();
