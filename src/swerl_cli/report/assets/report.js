// swerl report viewer: filters over the index, one record body parsed on selection. No network, no innerHTML of data.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("swerl-index").textContent);
  const LIMIT = 300;
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  };
  const opts = (sel, pairs) => { sel.replaceChildren(...pairs.map(([v, t]) => el("option", { value: v }, t))); };
  const statuses = [...new Set(D.index.map((r) => r[4]))].sort();
  opts($("f-iter"), [["", "all"], ...D.iterations.map((l, i) => [String(i), l])]);
  opts($("f-task"), [["", "all"], ...D.tasks.map((t, i) => [String(i), t])]);
  opts($("f-status"), [["", "all"], ...statuses.map((s) => [s, s])]);
  const flags = [...new Set(D.index.map((r) => r[8] || ""))].filter((f) => f).sort();
  opts($("f-tamper"), [["", "all"], ["*", "any flag"], ...flags.map((f) => [f, f])]);

  function rows() {
    const it = $("f-iter").value, sp = $("f-split").value, tk = $("f-task").value, st = $("f-status").value;
    const tp = $("f-tamper").value;
    const out = [];
    D.index.forEach((r, i) => {
      const fl = r[8] || "";
      if ((it === "" || r[0] === +it) && (sp === "" || r[1] === +sp) && (tk === "" || r[2] === +tk) &&
          (st === "" || r[4] === st) && (tp === "" || (tp === "*" ? fl !== "" : fl === tp))) out.push(i);
    });
    return out;
  }

  function list() {
    const idx = rows();
    const body = $("list").tBodies[0];
    body.replaceChildren(...idx.slice(0, LIMIT).map((i) => {
      const r = D.index[i];
      const tr = el("tr", { "data-i": i },
        el("td", {}, D.iterations[r[0]] + (r[1] ? " eval" : "")), el("td", { title: D.tasks[r[2]] }, D.tasks[r[2]]),
        el("td", {}, r[3]), el("td", {}, el("span", { class: "badge " + r[4] }, r[4])),
        el("td", {}, r[6] === null ? "–" : r[6]), el("td", {}, r[7] || "–"), el("td", {}, r[8] || "–"));
      tr.addEventListener("click", () => show(i).catch((e) => console.error(e)));
      return tr;
    }));
    $("f-count").textContent = idx.length > LIMIT ? `${idx.length} records (first ${LIMIT} listed)` : `${idx.length} records`;
  }

  function diff(text) {
    const pre = el("pre", { class: "diff" });
    for (const line of text.split("\n")) {
      let cls = "";
      if (line.startsWith("diff --git") || line.startsWith("+++") || line.startsWith("---")) cls = "file";
      else if (line.startsWith("@@")) cls = "hunk";
      else if (line.startsWith("+")) cls = "add";
      else if (line.startsWith("-")) cls = "del";
      pre.append(el("span", { class: cls }, line + "\n"));
    }
    return pre;
  }

  function tests(name, rows, more) {
    if (!rows || !rows.length) return el("p", {}, `${name}: none`);
    const t = el("table", { class: "tests" });
    for (const [id, ok, status] of rows) {
      t.append(el("tr", {}, el("td", { class: ok ? "ok" : "bad" }, ok ? "✓ pass" : "✗ fail"), el("td", {}, status || "absent"),
        el("td", {}, id)));
    }
    const pass = rows.filter((r) => r[1]).length;
    return el("div", { class: "testlist" }, el("h4", {}, `${name}: ${pass}/${rows.length} pass` + (more ? ` (+${more} more)` : "")), t);
  }

  const chunks = new Map();  // chunk number -> parsed bodies; a few kept
  async function bodies(c) {
    if (!chunks.has(c)) {
      const bin = Uint8Array.from(atob($("c" + c).textContent), (ch) => ch.charCodeAt(0));
      const stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream("gzip"));
      chunks.set(c, JSON.parse(await new Response(stream).text()));
      if (chunks.size > 16) chunks.delete(chunks.keys().next().value);
    }
    return chunks.get(c);
  }

  async function show(i) {
    const b = (await bodies(Math.floor(i / D.chunk)))[i % D.chunk];
    const r = D.index[i];
    for (const tr of $("list").querySelectorAll("tr.sel")) tr.classList.remove("sel");
    const row = $("list").querySelector(`tr[data-i="${i}"]`);
    if (row) row.classList.add("sel");
    const g = b.grade || {}, s = b.stats || {};
    const out = [
      el("h3", {}, b.id || D.tasks[r[2]]),
      el("p", {}, el("span", { class: "badge " + (g.status || "") }, g.status || "ungraded"),
        ` reward ${g.reward ?? "–"} · exit ${b.exit_status || "–"} · ${s.turns ?? "?"} turns · ` +
        `${s.tokens_total ?? "?"} tokens · ${s.format_errors ?? 0} format errors`),
    ];
    if (b.error) out.push(el("p", { class: "bad" }, "error: " + b.error));
    if (b.system !== null && b.system !== undefined) {
      out.push(el("details", {}, el("summary", {}, "system prompt"), el("pre", {}, D.systems[b.system])));
    }
    let turn = 0;
    for (const m of b.messages) {
      if (m.role === "assistant") {
        turn += 1;
        const head = el("div", { class: "who" }, `turn ${turn} · assistant`,
          m.tokens !== undefined ? ` · ${m.tokens} tokens` : "", m.finish ? ` · ${m.finish}` : "",
          m.format_error ? " " : "", m.format_error ? el("span", { class: "badge ferr" }, "format error") : null);
        const box = el("div", { class: "turn assistant" + (m.format_error ? " fmt" : "") }, head);
        if (m.text) box.append(el("pre", { class: "reasoning" }, m.text));
        if (m.cmd !== null && m.cmd !== undefined) box.append(el("pre", { class: "cmd" }, m.cmd));
        out.push(box);
      } else {
        const label = turn === 0 ? `${m.role} · issue` : `${m.role} · observation`;
        out.push(el("div", { class: "turn " + m.role }, el("div", { class: "who" }, label), el("pre", { class: "obs" }, m.text)));
      }
    }
    out.push(el("h3", {}, "final patch"), b.patch ? diff(b.patch) : el("p", { class: "hint" }, "(empty patch)"));
    out.push(el("h3", {}, "grade"),
      el("p", {}, `status ${g.status || "–"} · patch applied ${g.patch_applied ?? "–"}` +
        (g.apply_method ? ` (${g.apply_method})` : "") + ` · ${g.duration_s ?? "?"} s`),
      tests("FAIL_TO_PASS", g.FAIL_TO_PASS, g.FAIL_TO_PASS_more), tests("PASS_TO_PASS", g.PASS_TO_PASS, g.PASS_TO_PASS_more));
    if (g.error) out.push(el("p", { class: "bad" }, "grade error: " + g.error));
    if (g.reason) out.push(el("p", { class: "bad" }, "scored 0: " + g.reason));
    if (g.set_aside && g.set_aside.length) out.push(el("p", { class: "bad" }, "set aside: " + g.set_aside.join(", ")));
    const au = g.audit || {};
    const tampering = (Array.isArray(au.tampering) ? au.tampering : [])
      .map((f) => `${f.code} ${f.path}:${f.line}: ${f.what}`);
    for (const f of [...tampering, ...(au.findings || []), ...(au.outside_writes || []).map((p) => "wrote " + p)]) {
      out.push(el("p", { class: "bad" }, "audit: " + f));
    }
    out.push(el("details", { open: "" }, el("summary", {}, "test log (tail)"), el("pre", {}, g.log_tail || "")));
    $("detail").replaceChildren(...out);
    $("detail").dataset.shown = String(i);
  }

  for (const id of ["f-iter", "f-split", "f-task", "f-status", "f-tamper"]) $(id).addEventListener("change", list);
  for (const td of document.querySelectorAll("table.heat td.cell")) {
    td.addEventListener("click", () => {
      const task = D.tasks.indexOf(td.parentElement.dataset.task);
      $("f-task").value = String(task);
      $("f-iter").value = td.dataset.iter;
      $("f-split").value = td.closest("table").dataset.split === "eval" ? "1" : "0";
      list();
      $("viewer").scrollIntoView();
    });
  }
  list();
  window.swerlShow = show;
  const m = /^#r=(\d+)$/.exec(location.hash);
  if (m && +m[1] < D.index.length) show(+m[1]).catch((e) => console.error(e));
})();
