// /docs: renders this server's /openapi.json (no external assets, no inline script).
"use strict";
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
};
const refName = (s) => (s && s.$ref ? s.$ref.split("/").pop() : null);
function typeOf(s) {
  if (!s) return "";
  if (s.$ref) return refName(s);
  if (s.type === "array") return typeOf(s.items) + "[]";
  let t = s.type || "object";
  if (s.enum) t += " (" + s.enum.join(" | ") + ")";
  if (s.minimum !== undefined || s.maximum !== undefined) t += ` [${s.minimum ?? ""}..${s.maximum ?? ""}]`;
  if (s.maxLength !== undefined) t += ` ≤${s.maxLength} chars`;
  if (s.maxItems !== undefined) t += ` ≤${s.maxItems} items`;
  return t;
}
function schemaTable(s) {
  const t = el("table", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "type"), el("th", {}, "description")));
  const req = new Set(s.required || []);
  for (const [name, p] of Object.entries(s.properties || {})) {
    t.append(el("tr", {}, el("td", {}, el("code", {}, name), req.has(name) ? el("span", { class: "req" }, " *") : ""),
      el("td", {}, typeOf(p)), el("td", {}, p.description || "")));
  }
  return t;
}
function tryForm(path, op) {
  const form = el("form", { class: "try" });
  const params = (op.parameters || []).filter((p) => p.in === "query" || p.in === "path");
  for (const p of params) {
    form.append(el("label", {}, p.name + " ", el("input", { name: p.name, "data-in": p.in, placeholder: typeOf(p.schema) })));
  }
  const out = el("pre", {}, "");
  form.append(el("button", { type: "submit" }, "Send"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let url = path; const qs = new URLSearchParams();
    for (const input of form.querySelectorAll("input")) {
      if (!input.value) continue;
      if (input.dataset.in === "path") url = url.replace("{" + input.name + "}", encodeURIComponent(input.value));
      else for (const v of input.value.split("|")) qs.append(input.name, v);
    }
    const full = url + (qs.toString() ? "?" + qs : "");
    const r = await fetch(full); const text = await r.text();
    let shown = text; try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) {}
    out.textContent = `GET ${full}\n${r.status} ${r.headers.get("content-type")}\n\n${shown}`;
  });
  return el("div", {}, form, el("small", {}, "Separate repeated values with |"), out);
}
fetch("../openapi.json").then((r) => r.json()).then((spec) => {
  document.getElementById("title").textContent = `${spec.info.title} API ${spec.info.version}`;
  document.getElementById("desc").textContent = spec.info.description || "";
  const nav = document.getElementById("nav"), ops = document.getElementById("ops");
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "delete"].includes(method)) continue;
      const id = (method + path).replace(/[^a-z0-9]+/gi, "-");
      nav.append(el("a", { href: "#" + id }, method.toUpperCase() + " " + path));
      const sec = el("section", { class: "op", id },
        el("h2", {}, el("span", { class: "method " + method }, method), " ", el("code", {}, path)),
        el("p", {}, op.summary || ""), el("p", {}, op.description || ""));
      const params = [...(item.parameters || []), ...(op.parameters || [])];
      if (params.length) {
        const t = el("table", {}, el("tr", {}, el("th", {}, "parameter"), el("th", {}, "in"), el("th", {}, "type"), el("th", {}, "description")));
        for (const p of params) t.append(el("tr", {}, el("td", {}, el("code", {}, p.name), p.required ? el("span", { class: "req" }, " *") : ""),
          el("td", {}, p.in), el("td", {}, typeOf(p.schema)), el("td", {}, p.description || "")));
        sec.append(t);
      }
      if (op.requestBody) {
        const c = op.requestBody.content || {};
        for (const [mt, m] of Object.entries(c)) sec.append(el("p", {}, "Body: ", el("code", {}, mt), " ", typeOf(m.schema)));
      }
      const rt = el("table", {}, el("tr", {}, el("th", {}, "status"), el("th", {}, "content")));
      for (const [code, resp] of Object.entries(op.responses || {})) {
        const r = resp.$ref ? spec.components.responses[refName(resp)] : resp;
        const types = Object.entries((r && r.content) || {}).map(([mt, m]) => mt + " " + typeOf(m.schema)).join(", ");
        rt.append(el("tr", {}, el("td", {}, code), el("td", {}, (r && r.description ? r.description + ": " : "") + types)));
      }
      sec.append(rt);
      if (method === "get") sec.append(el("details", {}, el("summary", {}, "Try it"), tryForm(path, { parameters: params })));
      ops.append(sec);
    }
  }
  const schemas = document.getElementById("schemas");
  for (const [name, s] of Object.entries((spec.components || {}).schemas || {})) {
    schemas.append(el("h3", { id: "schema-" + name }, name), schemaTable(s));
  }
}).catch((e) => { document.getElementById("desc").textContent = "Could not load /openapi.json: " + e; });
