/* newsquarry embeddable results: <newsquarry-results>.
 *
 * Include once, on any origin:
 *   <script src="https://news.example/widget.js" defer></script>
 *   <newsquarry-results q="torture" speaker="Harry Solano" per-page="5"></newsquarry-results>
 *
 * Attributes: api (default: the origin this script came from), q, mode
 * ("passages" or "quotes"), sort, per-page, title, key (a scoped read key),
 * one attribute per filter (person, org, place, speaker, source, quote_kind,
 * article, date, date-from, date-to) and params (any extra query string,
 * e.g. "speaker=A&speaker=B" for several values).
 *
 * Rendered in a shadow root, so the host page's CSS does not leak in; style
 * it with CSS custom properties on the element: --nq-font, --nq-font-size,
 * --nq-text, --nq-muted, --nq-bg, --nq-accent, --nq-mark, --nq-border,
 * --nq-radius, --nq-gap. Parts: container, title, hit, text, meta, more.
 *
 * Children of the element are its fallback: shown as they are when this script
 * cannot load, and under the error message when the search service fails.
 *
 * Article text is only ever set with textContent: it shows as text, never
 * runs, and each piece sits in its own bidi isolate (<bdi>), so a right-to-left
 * override in a title cannot reorder the widget's own words. Fires
 * "newsquarry-load" (detail: {total, hits}) after each load and
 * "newsquarry-error" (detail: the problem body) on failure. When the service is
 * not reachable it retries by itself (after 5, 10, 20, then every 30 s).
 */
(function () {
  "use strict";
  if (window.customElements && customElements.get("newsquarry-results")) return;

  var script = document.currentScript;
  var SCRIPT_ORIGIN = script && script.src ? new URL(script.src, location.href).origin : location.origin;
  var FILTERS = ["person", "org", "place", "speaker", "source", "quote_kind", "article", "date"];
  var RETRY_DELAYS = [5, 10, 20, 30];
  var CSS = [
    ":host{display:block;font-family:var(--nq-font,system-ui,-apple-system,'Segoe UI',Roboto,sans-serif);",
    "font-size:var(--nq-font-size,15px);line-height:1.5;color:var(--nq-text,#1d2330);contain:content}",
    ":host([hidden]){display:none}",
    "*{box-sizing:border-box}",
    "bdi{unicode-bidi:isolate}",
    ".nq{background:var(--nq-bg,#fff);border:1px solid var(--nq-border,#d8dce3);",
    "border-radius:var(--nq-radius,8px);padding:var(--nq-gap,14px)}",
    "header{display:flex;flex-wrap:wrap;align-items:baseline;justify-content:space-between;gap:4px 12px;margin-bottom:8px}",
    "h2{font-size:1.05em;margin:0;color:var(--nq-text,#1d2330)}",
    ".count{color:var(--nq-muted,#5b6474);font-size:.85em;margin:0}",
    "ol{list-style:none;margin:0;padding:0}",
    "li{padding:10px 0;border-top:1px solid var(--nq-border,#d8dce3)}",
    "li:first-child{border-top:0}",
    ".text{margin:0 0 4px;overflow-wrap:anywhere}",
    "blockquote{margin:0 0 4px;padding-left:10px;border-left:3px solid var(--nq-accent,#2456c7)}",
    "mark{background:var(--nq-mark,#ffe27a);color:inherit;padding:0 1px;border-radius:2px}",
    ".meta{margin:0;font-size:.85em;color:var(--nq-muted,#5b6474);overflow-wrap:anywhere}",
    ".who{font-weight:600;color:var(--nq-text,#1d2330)}",
    "a{color:var(--nq-accent,#2456c7)}",
    "a:focus-visible,button:focus-visible{outline:2px solid var(--nq-accent,#2456c7);outline-offset:2px}",
    "button{font:inherit;margin-top:8px;padding:6px 12px;border-radius:var(--nq-radius,8px);",
    "border:1px solid var(--nq-accent,#2456c7);background:transparent;color:var(--nq-accent,#2456c7);cursor:pointer}",
    "button:hover{background:var(--nq-accent,#2456c7);color:var(--nq-bg,#fff)}",
    ".error{color:#a4161a;margin:0}",
    ".fallback{margin-top:6px}",
    ".visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}",
    "footer{margin-top:8px;font-size:.8em;color:var(--nq-muted,#5b6474)}"
  ].join("\n");

  /* Python counts code points, JS strings UTF-16 units: map offsets when needed. */
  function unitOffsets(text) {
    if (!/[\uD800-\uDFFF]/.test(text)) return null;
    var map = [], u = 0;
    for (var ch of text) { map.push(u); u += ch.length; }
    map.push(u);
    return map;
  }

  /* Text with <mark> around matches ([start, length] pairs), cut to about
   * maxLen characters around the first match. Built with text nodes only. */
  function markedText(text, matches, maxLen) {
    var frag = document.createDocumentFragment();
    text = text || "";
    var map = unitOffsets(text);
    var spans = (matches || []).map(function (m) {
      var s = m[0], e = m[0] + m[1];
      return map ? [map[Math.min(s, map.length - 1)], map[Math.min(e, map.length - 1)]] : [s, e];
    }).filter(function (m) { return m[1] > m[0]; }).sort(function (a, b) { return a[0] - b[0]; });
    var start = 0, end = text.length;
    if (maxLen && text.length > maxLen) {
      var first = spans.length ? spans[0][0] : 0;
      start = Math.max(0, first - Math.floor(maxLen / 4));
      end = Math.min(text.length, start + maxLen);
      if (end === text.length) start = Math.max(0, end - maxLen);
      if (start > 0) { var sp = text.indexOf(" ", start); if (sp !== -1 && sp - start < 20) start = sp + 1; }
      if (end < text.length) { var sp2 = text.lastIndexOf(" ", end); if (sp2 > start && end - sp2 < 20) end = sp2; }
    }
    if (start > 0) frag.append("… ");
    var inner = document.createElement("bdi");
    var pos = start;
    spans.forEach(function (m) {
      if (m[0] < pos || m[1] > end) return;
      inner.append(text.slice(pos, m[0]));
      var mark = document.createElement("mark");
      mark.textContent = text.slice(m[0], m[1]);
      inner.append(mark);
      pos = m[1];
    });
    inner.append(text.slice(pos, end));
    frag.append(inner);
    if (end < text.length) frag.append(" …");
    return frag;
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (attrs[k] != null) node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c != null) node.append(c); });
    return node;
  }

  function bdi(text, attrs) {
    return el("bdi", Object.assign({}, attrs || {}, { text: text }));
  }

  function permalink(api, passageId) {
    var i = passageId.lastIndexOf("#p");
    return api + "/passages/" + encodeURIComponent(passageId.slice(0, i)) + "/" + passageId.slice(i + 2);
  }

  function metaLine(api, hit, pid) {
    var parts = [el("a", { href: permalink(api, pid), target: "_blank", rel: "noopener" }, [bdi(hit.title || hit.article_id)])];
    if (hit.source) parts.push(" · ", bdi(hit.source, { class: "source" }));
    if (hit.date) parts.push(" · ", el("bdi", {}, [el("time", { datetime: hit.date, text: hit.date })]));
    return el("p", { class: "meta", part: "meta" }, parts);
  }

  class NewsquarryResults extends HTMLElement {
    static get observedAttributes() {
      return ["api", "q", "mode", "sort", "per-page", "key", "title", "params", "date-from", "date-to"].concat(FILTERS);
    }

    constructor() {
      super();
      this._root = this.attachShadow({ mode: "open" });
      if ("adoptedStyleSheets" in this._root && typeof CSSStyleSheet === "function" && "replaceSync" in CSSStyleSheet.prototype) {
        var sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
        this._root.adoptedStyleSheets = [sheet];
      } else {
        this._root.append(el("style", { text: CSS }));
      }
      this._box = el("section", { class: "nq", part: "container" });
      this._root.append(this._box);
      this._page = 1;
      this._timer = null;
      this._retry = null;
      this._attempt = 0;
      this._seq = 0;
    }

    connectedCallback() { this._schedule(); }
    attributeChangedCallback() { if (this.isConnected) this._schedule(); }

    get api() { return (this.getAttribute("api") || SCRIPT_ORIGIN).replace(/\/+$/, ""); }
    get mode() { return this.getAttribute("mode") === "quotes" ? "quotes" : "passages"; }

    _schedule() {
      var self = this;
      clearTimeout(this._timer);
      this._timer = setTimeout(function () { self._page = 1; self._load(false); }, 0);
    }

    _params(page) {
      var p = new URLSearchParams(this.getAttribute("params") || "");
      var self = this;
      if (this.getAttribute("q")) p.set("q", this.getAttribute("q"));
      FILTERS.forEach(function (f) { var v = self.getAttribute(f); if (v) p.append(f, v); });
      if (this.getAttribute("date-from")) p.set("date_from", this.getAttribute("date-from"));
      if (this.getAttribute("date-to")) p.set("date_to", this.getAttribute("date-to"));
      if (this.getAttribute("sort")) p.set("sort", this.getAttribute("sort"));
      var per = parseInt(this.getAttribute("per-page") || "5", 10);
      p.set("per_page", String(per > 0 ? Math.min(per, 50) : 5));
      if (page > 1) p.set("page", String(page));
      if (this.getAttribute("key")) p.set("key", this.getAttribute("key"));
      p.set("suggest", "false");
      return p;
    }

    _load(append) {
      var self = this, seq = ++this._seq;
      var url = this.api + "/v1/" + (this.mode === "quotes" ? "quotes" : "search") + "?" + this._params(this._page);
      clearTimeout(this._retry);
      this.setAttribute("aria-busy", "true");
      return fetch(url, { headers: { Accept: "application/json" }, credentials: "omit", mode: "cors" })
        .catch(function () { throw { unreachable: true, status: 0 }; })
        .then(function (r) {
          return r.json().catch(function () { return {}; }).then(function (body) {
            if (!r.ok) throw { body: body, status: r.status, detail: body.detail || ("HTTP " + r.status) };
            return body;
          });
        })
        .then(function (body) {
          if (seq !== self._seq) return;
          self._attempt = 0;
          self._render(body, append);
          self.dispatchEvent(new CustomEvent("newsquarry-load", { detail: { total: body.total, hits: body.hits } }));
        })
        .catch(function (err) {
          if (seq !== self._seq) return;
          if (!err || err.status === undefined) throw err; // a bug of ours, not a failed search
          self._failed(err, append);
          self.dispatchEvent(new CustomEvent("newsquarry-error", { detail: err.body || { detail: err.detail || "not reachable", status: err.status } }));
        })
        .finally(function () { if (seq === self._seq) self.removeAttribute("aria-busy"); });
    }

    /* A failed load: the title stays, the reason in words, a retry where one can help, and
     * the element's own children (the page author's fallback) below. */
    _failed(err, append) {
      var self = this;
      var again = err.unreachable || err.status === 429 || err.status >= 500;
      var message = err.unreachable ? "The search service is not reachable."
        : again ? "The search service had a problem (" + err.status + ")." : err.detail;
      var wait = RETRY_DELAYS[Math.min(this._attempt, RETRY_DELAYS.length - 1)];
      var countdown = el("span", { text: again ? " Retrying in " + wait + " s…" : "" });
      var note = el("p", { class: "error", role: "alert" }, [message, countdown]);
      var retry = again ? el("button", { type: "button", part: "retry", text: "Retry now" }) : null;
      if (retry) retry.addEventListener("click", function () { self._load(append); });
      if (append && this._box.querySelector("ol")) {  // "More results" failed: keep what is shown
        this._page -= 1;  // the same page is asked for again by the next click
        var old = this._box.querySelector(".error");
        if (old) old.remove();
        this._box.querySelector("ol").after(note);
        return;
      }
      var title = this.getAttribute("title");
      this._box.replaceChildren(
        title ? el("header", {}, [el("h2", { part: "title", text: title })]) : null,
        note, retry, el("div", { class: "fallback" }, [el("slot")])
      );
      if (again) {
        this._attempt += 1;
        var left = wait;
        var tick = function () {
          if (!countdown.isConnected) return;
          left -= 1;
          if (left <= 0) { countdown.textContent = " Retrying…"; self._load(false); return; }
          countdown.textContent = " Retrying in " + left + " s…";
          self._retry = setTimeout(tick, 1000);
        };
        this._retry = setTimeout(tick, 1000);
      }
    }

    _hit(hit) {
      var api = this.api;
      if (this.mode === "quotes") {
        var who = hit.speaker ? bdi(hit.speaker, { class: "who" }) : el("span", { text: "unknown speaker" });
        return el("li", { part: "hit", "data-id": hit.id }, [
          el("blockquote", { part: "text" }, [el("q", {}, [markedText(hit.text, hit.matches, 400)])]),
          el("p", { class: "meta" }, ["— ", who, hit.kind && hit.kind !== "direct" ? " (" + hit.kind + ")" : ""]),
          metaLine(api, hit, hit.passage_id)
        ]);
      }
      return el("li", { part: "hit", "data-id": hit.id }, [
        el("p", { class: "text", part: "text" }, [markedText(hit.text, hit.matches, 280)]),
        (hit.speakers && hit.speakers.length) ? el("p", { class: "meta" }, ["Speakers: "].concat(hit.speakers.map(function (name, i) {
          return i ? [", ", bdi(name, { class: "who" })] : [bdi(name, { class: "who" })];
        }).reduce(function (a, b) { return a.concat(b); }, []))) : null,
        metaLine(api, hit, hit.id)
      ]);
    }

    _render(body, append) {
      var list = append && this._box.querySelector("ol");
      if (!list) {
        var title = this.getAttribute("title");
        var search = new URLSearchParams(this._params(1));
        ["per_page", "suggest", "key"].forEach(function (k) { search.delete(k); });
        if (this.mode === "quotes") search.set("mode", "quotes");
        list = el("ol", { part: "list" });
        this._count = el("p", { class: "count", role: "status" });
        this._box.replaceChildren(
          el("header", {}, [title ? el("h2", { part: "title", text: title }) : null, this._count]),
          list,
          el("footer", {}, [el("a", { href: this.api + "/?" + search, target: "_blank", rel: "noopener", text: "Search on newsquarry" })])
        );
      }
      var self = this;
      var added = (body.hits || []).map(function (h) { return self._hit(h); });
      added.forEach(function (li) { list.append(li); });
      var old = this._box.querySelector(".error");
      if (old) old.remove();
      var total = body.total || 0;
      var noun = this.mode === "quotes" ? (total === 1 ? "quotation" : "quotations") : (total === 1 ? "passage" : "passages");
      var shown = list.children.length;
      this._count.textContent = total ? total + " " + noun + (shown < total ? ", " + shown + " shown" : "") : "No " + noun + " found";
      var more = this._box.querySelector("button[part=more]");
      var hadFocus = more && this._root.activeElement === more;
      if (body.page < body.total_pages) {
        if (!more) {  // one button for the widget's life: focus stays on it across loads
          more = el("button", { type: "button", part: "more", text: "More results" });
          more.addEventListener("click", function () {
            if (more.getAttribute("aria-disabled") === "true") return;
            more.setAttribute("aria-disabled", "true");
            self._page += 1;
            self._load(true).finally(function () { more.removeAttribute("aria-disabled"); });
          });
          list.after(more);
        }
      } else if (more) {
        more.remove();
        // the last page is in: focus goes to its first result, not to the page's <body>
        var link = hadFocus && added.length && added[0].querySelector("a");
        if (link) link.focus();
      }
    }
  }

  customElements.define("newsquarry-results", NewsquarryResults);
})();
