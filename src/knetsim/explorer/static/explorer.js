// knetsim connectivity explorer: one page, no network access. The data is the JSON in
// <script id="knetsim-data"> (written by `knetsim matrix -o html`), or, served live by
// `knetsim up`, fetched from ./data.json. The grid is virtualised: only the cells in view
// exist in the DOM, so a 900 x 900 answer scrolls as fast as a 9 x 9 one.
"use strict";
(function () {
  const CELL = 22, LABEL_W = 300, HEAD_H = 150;
  let D = null, rows = [], cellMap = new Map(), partlyMap = new Map(), view = {};
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));

  function load(data) {
    D = data;
    cellMap = new Map(); partlyMap = new Map();
    const R = D.rows.length;
    for (const [i, j, p] of D.cells) cellMap.set(i * R + j, p);
    for (const [i, j, part] of D.partly) partlyMap.set(i * R + j, part);
    const nsSel = $("ns");
    const current = nsSel.value;
    nsSel.innerHTML = '<option value="">all namespaces</option>' +
      [...new Set(D.rows.map((r) => r.namespace).filter(Boolean))].sort()
        .map((n) => `<option${n === current ? " selected" : ""}>${esc(n)}</option>`).join("");
    if (!view.init) {
      $("port").value = D.view.port || "";
      $("proto").value = D.view.protocol || "TCP";
      view.init = true;
    }
    $("notes").innerHTML = D.notes.map((n) => `<li>${esc(n)}</li>`).join("");
    $("level").textContent = D.level === "pod" ? "pods" : "workloads";
    applyFilters();
    drawMap();
  }

  // --- what a cell says ----------------------------------------------------------------
  function contains(pattern, proto, port) {
    const ranges = pattern.ranges[proto] || [];
    return ranges.some(([lo, hi]) => lo <= port && port <= hi);
  }

  function portFilter() {
    const port = parseInt($("port").value, 10);
    return Number.isFinite(port) && port > 0 ? {proto: $("proto").value, port} : null;
  }

  function state(i, j) {
    const R = D.rows.length, a = D.rows[i], b = D.rows[j];
    if (a.kind === "external" && b.kind === "external") return {s: "none", text: "two external ranges"};
    if (i === j && a.count === 1) return {s: "self", text: "a pod can always reach itself"};
    const p = cellMap.get(i * R + j), part = partlyMap.get(i * R + j);
    const pattern = p === undefined ? null : D.patterns[p];
    const f = portFilter();
    if (f) {
      const ok = pattern && contains(pattern, f.proto, f.port);
      if (ok) return {s: "ok", text: `allowed on ${f.proto} ${f.port}`, pattern, part};
      if (part) return {s: "partly", text: `allowed on ${f.proto} ${f.port} for ${part.pairs} of ${part.of} pod pairs`,
                        pattern, part};
      return {s: "no", text: `denied on ${f.proto} ${f.port}` + deniedBy(i, j, f), pattern, part};
    }
    if (pattern && pattern.all) return {s: "ok", text: "all connections allowed", pattern, part};
    if (pattern || part) return {s: "partly", text: `partly allowed: ${pattern ? pattern.text : "only some pod pairs"}`,
                                 pattern, part};
    return {s: "no", text: "denied: no connection allowed", pattern, part};
  }

  const MARK = {ok: "\u2713", no: "\u2717", partly: "\u25D0", self: "\u00B7", none: ""};

  // --- filters -----------------------------------------------------------------------
  function applyFilters() {
    const ns = $("ns").value;
    const label = $("label").value.trim();
    const [lk, lv] = label.includes("=") ? label.split("=", 2).map((s) => s.trim()) : [label, null];
    rows = [];
    D.rows.forEach((r, i) => {
      if (ns && r.namespace !== ns && r.kind !== "external") return;
      if (lk) {
        if (r.kind === "external") return;
        const v = r.labels[lk];
        if (v === undefined || (lv !== null && v !== lv)) return;
      }
      rows.push(i);
    });
    $("count").textContent = `${rows.length} of ${D.rows.length} rows`;
    const space = $("space");
    space.style.width = LABEL_W + rows.length * CELL + "px";
    space.style.height = HEAD_H + rows.length * CELL + "px";
    draw();
  }

  // --- the grid, virtualised -------------------------------------------------------------
  function draw() {
    const box = $("grid"), layer = $("cells");
    const x0 = box.scrollLeft, y0 = box.scrollTop, w = box.clientWidth, h = box.clientHeight;
    const c0 = Math.max(0, Math.floor(x0 / CELL)), c1 = Math.min(rows.length, Math.ceil((x0 + w - LABEL_W) / CELL) + 1);
    const r0 = Math.max(0, Math.floor(y0 / CELL)), r1 = Math.min(rows.length, Math.ceil((y0 + h - HEAD_H) / CELL) + 1);
    const html = [];
    for (let r = r0; r < r1; r++) {
      const i = rows[r];
      for (let c = c0; c < c1; c++) {
        const j = rows[c], st = state(i, j);
        const label = `${D.rows[i].name} \u2192 ${D.rows[j].name}: ${st.text}`;
        html.push(`<div role="gridcell" class="cell ${st.s}" data-i="${i}" data-j="${j}" title="${esc(label)}" ` +
                  `aria-label="${esc(label)}" style="left:${LABEL_W + c * CELL}px;top:${HEAD_H + r * CELL}px">` +
                  `${MARK[st.s]}</div>`);
      }
      html.push(`<div role="rowheader" class="rowhead" style="left:${x0}px;top:${HEAD_H + r * CELL}px">` +
                `${esc(D.rows[i].name)}</div>`);
    }
    for (let c = c0; c < c1; c++) {
      html.push(`<div role="columnheader" class="colhead" style="left:${LABEL_W + c * CELL}px;top:${y0}px">` +
                `<span>${esc(D.rows[rows[c]].name)}</span></div>`);
    }
    html.push(`<div class="corner" style="left:${x0}px;top:${y0}px">rows: sources<br>columns: destinations</div>`);
    layer.innerHTML = html.join("");
  }

  // --- explanations ----------------------------------------------------------------------
  function inSet(setId, c) {
    return D.sets[setId].some(([lo, hi]) => lo <= c && c <= hi);
  }

  // The ports a rule names towards the destination class (a named port resolves there).
  function rulePorts(rule, dstClass) {
    if (rule.ports === null) return null;
    const out = [];
    for (const p of rule.ports) {
      for (const proto of p.protocols) {
        if (p.name !== undefined) {
          const n = D.classes[dstClass].ports[`${p.name}/${proto}`];
          if (n !== undefined) out.push([proto, n, n, p.index]);
        } else if (p.from === undefined) out.push([proto, 1, 65535, p.index]);
        else out.push([proto, p.from, p.to, p.index]);
      }
    }
    return out;
  }

  function portsText(list) {
    return list.length ? list.map(([pr, lo, hi]) => (lo === 1 && hi === 65535 ? `${pr} (every port)` :
      lo === hi ? `${pr} ${lo}` : `${pr} ${lo}-${hi}`)).join(", ") : "no port on this destination";
  }

  // --- ClusterNetworkPolicy tiers ----------------------------------------------------------
  // A tier's policies (in order: priority, then name) for one side: the first rule whose peer matches and
  // whose ports hold the port decides; null when none does (the connection goes on to the next tier).
  function clusterMatch(pids, side, pc, dstClass, f) {
    for (const pid of pids) {
      const pol = D.policies[pid];
      for (const rule of pol[side]) {
        const hit = rule.peers.find((p) => inSet(p.set, pc));
        if (!hit) continue;
        const ports = rulePorts(rule, dstClass);
        let port = -1;
        if (ports !== null) {
          const m = ports.find(([pr, lo, hi]) => pr === f.proto && lo <= f.port && f.port <= hi);
          if (!m) continue;
          port = m[3];
        }
        return {pid, pol, rule, peer: hit.index, port};
      }
    }
    return null;
  }

  function ruleText(m) {
    const p = m.pol, r = m.rule;
    const name = r.name ? `\`${r.name}\`` : `#${r.index + 1} (spec.${m.side}[${r.index}])`;
    const where = p.priority === null ? `${p.tier} tier` : `${p.tier} tier, priority ${p.priority}`;
    return `${p.kind} \`${p.name}\` rule ${name} (${where})`;
  }

  function clusterTiers(sc, side) {
    const t = D.classes[sc].tiers;
    return t ? t[side] : {Admin: [], Baseline: []};
  }

  // " (Admin tier)": the tier that denied a cell on one port (the egress side is looked at first).
  function deniedBy(i, j, f) {
    if (D.tiers.length < 2) return "";
    for (const [side, sub, peer] of [["egress", i, j], ["ingress", j, i]]) {
      const r = explainSide(side, sub, peer, f);
      if (!r.allowed) return r.tier ? ` (${r.tier} tier)` : "";
    }
    return "";
  }

  function clusterEntry(side, m) {
    return {side, tier: m.pol.tier, kind: m.pol.kind, policy: m.pol.name, rule: m.rule.index, peer: m.peer,
            port: m.port, allowed: m.rule.action === "Accept", action: m.rule.action, pid: m.pid};
  }

  // Without a port: every rule of a tier that matches the peer, with its action and ports.
  function clusterRules(pids, side, pc, dstClass, out) {
    for (const pid of pids) {
      const pol = D.policies[pid];
      for (const rule of pol[side]) {
        const hit = rule.peers.find((p) => inSet(p.set, pc));
        if (!hit) continue;
        const ports = rulePorts(rule, dstClass);
        const m = {pid, pol, rule, peer: hit.index, port: -1, side};
        out.lines.push(`  ${pol.tier} tier: ${ruleText(m)}: ${rule.action}` +
                       (ports === null ? " (every port)" : ` on ${portsText(ports)}`));
        out.entries.push(clusterEntry(side, m));
      }
    }
  }

  // One side: egress of the source (peer = destination) or ingress of the destination (peer = source).
  // Tiers in order: Admin, NetworkPolicy, Baseline, then the default (allow).
  function explainSide(side, subjectRow, peerRow, f) {
    const sub = D.rows[subjectRow], peer = D.rows[peerRow];
    const sc = sub.class, pc = peer.class, dstClass = side === "egress" ? pc : sc;
    const cls = D.classes[sc];
    const out = {side, subject: sub.name, allowed: false, entries: [], candidates: [], lines: [], tier: ""};
    if (cls.kind !== "pod") {
      out.allowed = true;
      out.lines.push(`${side} of ${sub.name}: not enforced (${cls.kind === "node" ?
        "hostNetwork pods are node traffic; pod policies do not apply" : "outside the cluster"})`);
      return out;
    }
    const tiers = clusterTiers(sc, side);
    const passed = [];
    if (tiers.Admin.length) {
      if (f) {
        const m = clusterMatch(tiers.Admin, side, pc, dstClass, f);
        if (m) {
          m.side = side;
          out.entries.push(clusterEntry(side, m));
          if (m.rule.action !== "Pass") {
            out.allowed = m.rule.action === "Accept";
            out.tier = "Admin";
            out.decided = m;
            out.lines.push(`${side} of ${sub.name}: ${out.allowed ? "allowed" : "denied"} by ${ruleText(m)}`);
            return out;
          }
          passed.push(m);
          out.lines.push(`${side} of ${sub.name}: passed by ${ruleText(m)} to the NetworkPolicy tier`);
        }
      } else {
        out.lines.push(`${side} of ${sub.name}: the Admin tier decides first (per port):`);
        clusterRules(tiers.Admin, side, pc, dstClass, out);
      }
    }
    const isolating = cls[side];
    if (!isolating.length) {
      if (tiers.Baseline.length) {
        if (f) {
          const m = clusterMatch(tiers.Baseline, side, pc, dstClass, f);
          if (m && m.rule.action !== "Pass") {
            m.side = side;
            out.entries.push(clusterEntry(side, m));
            out.allowed = m.rule.action === "Accept";
            out.tier = "Baseline";
            out.decided = m;
            out.lines.push(`${side} of ${sub.name}: ${out.allowed ? "allowed" : "denied"} by ${ruleText(m)}; ` +
                           `no NetworkPolicy selects it for ${side}`);
            return out;
          }
        } else {
          out.lines.push(`${side} of ${sub.name}: no NetworkPolicy selects it for ${side}; the Baseline tier ` +
                         "decides (per port):");
          clusterRules(tiers.Baseline, side, pc, dstClass, out);
        }
      }
      out.allowed = true;
      out.tier = "default";
      out.lines.push(`${side} of ${sub.name}: no policy selects it for ${side}, so it is not isolated: ` +
                     `all ${side} traffic is allowed`);
      return out;
    }
    out.tier = "NetworkPolicy";
    const names = isolating.map((pid) => `${D.policies[pid].kind} ${D.policies[pid].name}`);
    out.lines.push(`${side} of ${sub.name}: isolated by ${names.join(", ")} (tier ${D.policies[isolating[0]].tier})`);
    const word = side === "egress" ? "to" : "from";
    for (const pid of isolating) {
      const pol = D.policies[pid];
      pol[side].forEach((rule) => {
        const where = `${pol.kind} ${pol.name} ${side}[${rule.index}]`;
        let peerIdx = -1;
        if (rule.peers !== null) {
          const hit = rule.peers.find((p) => inSet(p.set, pc));
          peerIdx = hit ? hit.index : null;
        }
        const ports = rulePorts(rule, dstClass);
        let portIdx = -1, portOk = true;
        if (ports !== null) {
          if (f) {
            const hit = ports.find(([pr, lo, hi]) => pr === f.proto && lo <= f.port && f.port <= hi);
            portIdx = hit ? hit[3] : null;
            portOk = !!hit;
          } else portOk = ports.length > 0;
        }
        const peerOk = peerIdx !== null;
        const entry = {side, tier: pol.tier, kind: pol.kind, policy: pol.name, rule: rule.index,
                       peer: peerIdx, port: portIdx, allowed: peerOk && portOk, pid};
        out.entries.push(entry);
        if (peerOk && portOk) {
          let loc = where + (peerIdx >= 0 ? `.${word}[${peerIdx}]` : "") + (portIdx >= 0 ? `.ports[${portIdx}]` : "");
          out.lines.push(`  allowed by ${loc}` + (ports === null ? " (every port)" : f ? "" : `: ${portsText(ports)}`));
        } else if (!peerOk) {
          out.lines.push(`  ${where}: ${word}: no peer matches ${peer.name} (peers: ` +
                         `${rule.peers.length ? rule.peers.map((p) => p.text).join("; ") : "none: an empty rule"})`);
          out.candidates.push({type: "peer", pol, rule, portOk});
        } else {
          out.lines.push(`  ${where}: ports: ${f ? `${f.proto} ${f.port}` : "nothing"} is not among ` +
                         `${rule.ports.map((p) => p.text).join(", ")} (on ${D.rows[side === "egress" ? peerRow : subjectRow].name}: ` +
                         `${portsText(ports)})`);
          out.candidates.push({type: "port", pol, rule});
        }
      });
    }
    out.allowed = out.entries.some((e) => e.allowed && e.tier === "NetworkPolicy");
    if (!out.allowed && !out.entries.some((e) => e.tier === "NetworkPolicy")) {
      out.lines.push(`  these policies allow no ${side} traffic at all`);
    }
    return out;
  }

  function yamlPeer(peerRow, policyNs) {
    const p = D.rows[peerRow].peer;
    if (p.ipBlock) return `- ipBlock: {cidr: ${p.ipBlock.cidr}}`;
    const labels = Object.entries(p.podSelector.matchLabels).map(([k, v]) => `${k}: ${v}`).join(", ");
    if (p.namespace === policyNs) return `- podSelector: {matchLabels: {${labels}}}`;
    return `- namespaceSelector: {matchLabels: {${D.nsLabel}: ${p.namespace}}}\n  podSelector: {matchLabels: {${labels}}}`;
  }

  // The smallest edit that lets this side through: a port where the peer already matches, a peer
  // where the port already matches, else a new rule in the first policy that isolates the subject.
  function fix(side, res, peerRow, f) {
    const word = side === "egress" ? "to" : "from";
    if (res.tier === "Admin" && res.decided) {
      return `${ruleText(res.decided)} denies it before any NetworkPolicy: only the cluster administrator can ` +
             "let it through (change that rule, or an Accept or Pass rule for it in an Admin policy that comes first)";
    }
    if (res.tier === "Baseline" && res.decided) {
      return `a NetworkPolicy in the namespace of ${res.subject} that selects it for ${side} and allows this ` +
             `overrides ${ruleText(res.decided)}`;
    }
    const port = f ? `{protocol: ${f.proto}, port: ${f.port}}` : "{protocol: TCP, port: PORT}";
    const byPort = res.candidates.find((c) => c.type === "port");
    if (byPort) return `add ${port} to ${byPort.pol.kind} ${byPort.pol.name} spec.${side}[${byPort.rule.index}].ports`;
    const byPeer = res.candidates.find((c) => c.type === "peer" && c.portOk && c.rule.peers.length);
    if (byPeer) {
      return `add to ${byPeer.pol.kind} ${byPeer.pol.name} spec.${side}[${byPeer.rule.index}].${word}:\n` +
             indent(yamlPeer(peerRow, byPeer.pol.namespace));
    }
    // A new rule goes where it touches the fewest other pods: a policy with a podSelector before one for all.
    const isolating = D.classes[D.rows[res.subjectRow].class][side].map((pid) => D.policies[pid]);
    const first = isolating.find((p) => p.selector !== "<none>") || isolating[0];
    return `add a rule to ${first.kind} ${first.name} spec.${side}:\n    - ${word}:\n` +
           `${indent(indent(yamlPeer(peerRow, first.namespace)))}\n      ports: [${port}]`;
  }

  const indent = (s) => s.split("\n").map((l) => "    " + l).join("\n");

  function explain(i, j) {
    const a = D.rows[i], b = D.rows[j], st = state(i, j), f = portFilter();
    const lines = [`${a.name} \u2192 ${b.name}`, `${st.s === "ok" ? "ALLOWED" : st.s === "no" ? "DENIED" :
      st.s === "partly" ? "PARTLY ALLOWED" : "\u2014"}: ${st.text}`];
    if (st.pattern) lines.push(`allowed connections: ${st.pattern.text}`);
    if (st.part) lines.push(`for ${st.part.pairs} of ${st.part.of} pod pairs also: ` +
                            `${st.part.allowed === "all" ? "All connections" : JSON.stringify(st.part.allowed)} ` +
                            `(${st.part.reason})`);
    if (st.s === "self" || st.s === "none") { show(lines); return; }
    const eg = explainSide("egress", i, j, f); eg.subjectRow = i;
    const ing = explainSide("ingress", j, i, f); ing.subjectRow = j;
    lines.push("", ...eg.lines, ...ing.lines);
    const denied = [eg, ing].filter((r) => !r.allowed);
    if (st.s !== "ok" && denied.length) {
      lines.push("", "smallest change that would allow it" + (f ? ` (${f.proto} ${f.port})` : "") + ":");
      for (const r of denied) lines.push(`  ${r.side}: ` + fix(r.side, r, r.side === "egress" ? j : i, f ||
        (b.containerPorts[0] ? {proto: b.containerPorts[0].protocol, port: b.containerPorts[0].port} : null)));
    }
    show(lines, [eg, ing]);
  }

  function show(lines, sides) {
    $("explain").textContent = lines.join("\n");
    $("explain").dataset.entries = JSON.stringify((sides || []).flatMap((s) => s.entries.map((e) => ({
      side: e.side, tier: e.tier, kind: e.kind, policy: e.policy, rule: e.rule, peer: e.peer, port: e.port,
      allowed: e.allowed, action: e.action || (e.allowed ? "Accept" : "")}))));
    $("explain").dataset.tiers = JSON.stringify((sides || []).map((s) => ({side: s.side, tier: s.tier,
      allowed: s.allowed, decided: s.decided ? {policy: s.decided.pol.name, rule: s.decided.rule.index,
      action: s.decided.rule.action} : null})));
  }

  // --- the service map -----------------------------------------------------------------
  function drawMap() {
    const m = D.map, box = $("map");
    const bySvc = new Map(m.services.map((s) => [s.name, s]));
    const parts = [];
    for (const e of m.entries) {
      parts.push(`<div class="entry"><h3>${esc(e.kind)} ${esc(e.name)}${e.class ? ` <small>(${esc(e.class)})</small>` : ""}</h3><ul>`);
      for (const r of e.routes) {
        const svc = bySvc.get(r.service);
        parts.push(`<li>${esc(r.host)}${esc(r.path)} \u2192 <span class="svc${svc && svc.empty ? " empty" : ""}">` +
                   `Service ${esc(r.service)}:${esc(r.port)}</span>${svc ? "" : ' <b class="empty">(no such Service)</b>'}</li>`);
      }
      parts.push("</ul></div>");
    }
    parts.push('<table class="services"><thead><tr><th>Service</th><th>type</th><th>ports</th><th>EndpointSlices</th>' +
               "<th>pods (ready)</th></tr></thead><tbody>");
    for (const s of m.services) {
      const eps = s.endpoints.map((e) => `${esc(e.pod || e.addresses.join(","))}${e.ready ? "" : " (not ready)"}`);
      parts.push(`<tr class="${s.empty ? "empty" : ""}" data-service="${esc(s.name)}"><td>${esc(s.name)}</td>` +
                 `<td>${esc(s.type)}</td><td>${esc(s.ports.join(", "))}</td><td>${esc(s.slices.join(", ") || "none")}</td>` +
                 `<td>${s.empty ? "<b>no ready endpoints</b>" + (eps.length ? ": " : "") : ""}${eps.join(", ")}</td></tr>`);
    }
    parts.push("</tbody></table>");
    box.innerHTML = parts.join("");
  }

  // --- wiring ------------------------------------------------------------------------
  function start() {
    $("grid").addEventListener("scroll", () => window.requestAnimationFrame(draw));
    window.addEventListener("resize", draw);
    $("cells").addEventListener("click", (ev) => {
      const cell = ev.target.closest(".cell");
      if (!cell) return;
      document.querySelectorAll(".cell.selected").forEach((c) => c.classList.remove("selected"));
      cell.classList.add("selected");
      explain(+cell.dataset.i, +cell.dataset.j);
    });
    for (const id of ["ns", "label", "port", "proto"]) $(id).addEventListener("input", applyFilters);
    for (const tab of document.querySelectorAll("[data-tab]")) {
      tab.addEventListener("click", () => {
        document.querySelectorAll("[data-tab]").forEach((t) => t.setAttribute("aria-selected", t === tab));
        $("gridview").hidden = tab.dataset.tab !== "grid";
        $("map").hidden = tab.dataset.tab !== "map";
        if (tab.dataset.tab === "grid") draw();
      });
    }
    const inline = $("knetsim-data");
    if (inline && inline.textContent.trim()) load(JSON.parse(inline.textContent));
    else {
      const refresh = () => fetch("data.json", {credentials: "same-origin"}).then((r) => r.json()).then(load);
      $("reload").hidden = false;
      $("reload").addEventListener("click", refresh);
      refresh();
    }
  }
  window.knetsimExplorer = {state: (i, j) => state(i, j), data: () => D};
  document.addEventListener("DOMContentLoaded", start);
})();
