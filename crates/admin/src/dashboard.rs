//! The admin dashboard: one self-contained HTML document (inline CSS, JS
//! and SVG; no external assets), rendered on the server from the same JSON
//! documents the `/api/*` endpoints serve, so it reads the same with
//! JavaScript off. With JavaScript on, it fetches those endpoints every few
//! seconds and re-renders each panel with the same markup, and the agent
//! table sorts by any column.
//!
//! Every value shown is escaped: agent names, paths and rules come from
//! requests and the policy file.

use std::fmt::Write;

use chrono::DateTime;
use serde_json::Value;

use crawlgate_telemetry::activity::Window;

/// The JSON documents a page shows.
pub struct Data<'a> {
    /// `/status`.
    pub status: &'a Value,
    /// `/api/agents`.
    pub agents: &'a Value,
    /// `/api/timeline`.
    pub timeline: &'a Value,
    /// `/api/violations`.
    pub violations: &'a Value,
    /// `/api/compliance`.
    pub compliance: &'a Value,
    /// `/api/referrals`.
    pub referrals: &'a Value,
    /// `/api/charges`.
    pub charges: &'a Value,
}

/// Seconds between two refreshes.
pub const REFRESH_SECONDS: u32 = 5;

/// Minutes the chart shows by default (`/api/timeline` without `minutes=`).
pub const CHART_MINUTES: usize = 60;

/// Minutes the chart shows for a window: the window, or the last hour
/// for counts since the start.
pub fn chart_minutes(window: Window) -> usize {
    match window {
        Window::All => CHART_MINUTES,
        Window::Minutes(n) => n,
    }
}

/// The window selector: a link per window, the current one marked.
fn window_nav(current: &str) -> String {
    let mut out = String::from("<nav id=\"window\" aria-label=\"Window\">");
    for (name, w) in Window::CHOICES {
        let label = match w {
            Window::All => "since start".to_string(),
            Window::Minutes(n) => format!("{} h", n / 60),
        };
        let mark = if name == current { " aria-current=\"page\"" } else { "" };
        let _ = write!(out, "<a href=\"?window={name}\"{mark}>{label}</a>");
    }
    out.push_str("</nav>");
    out
}

/// HTML-escapes text for element content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A JSON value as escaped cell text: strings as they are, numbers in
/// plain digits, null as an empty cell.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => esc(s),
        Value::Null => String::new(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.1}"),
            _ => n.to_string(),
        },
        other => esc(&other.to_string()),
    }
}

/// A byte count in a few characters: exact below 10,000, else with a
/// binary prefix (K = 1024), e.g. `117.7M`.
pub fn bytes(v: &Value) -> String {
    let Some(n) = v.as_u64() else { return text(v) };
    if n < 10_000 {
        return n.to_string();
    }
    let mut x = n as f64;
    for unit in ["K", "M", "G", "T", "P"] {
        x /= 1024.0;
        if x < 999.95 {
            return format!("{x:.1}{unit}");
        }
    }
    format!("{:.1}E", x / 1024.0)
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS UTC` (empty for 0 or null, and
/// for a time past chrono's range, some 262,000 years).
pub fn utc(v: &Value) -> String {
    let Some(secs) = v.as_u64().filter(|s| *s > 0) else { return String::new() };
    let Some(t) = i64::try_from(secs).ok().and_then(|s| DateTime::from_timestamp(s, 0)) else { return String::new() };
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

pub(crate) fn rows(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// The columns of the agent table: header, JSON key, numeric.
pub const AGENT_COLUMNS: &[(&str, &str, bool)] = &[
    ("Agent", "agent", false),
    ("Operator", "operator", false),
    ("Requests", "requests", true),
    ("Allowed", "allowed", true),
    ("Violations", "violations", true),
    ("Blocked", "blocked", true),
    ("Limited", "limited", true),
    ("Paid", "paid", true),
    ("Spoofed", "spoofed", true),
    ("Verified", "verified", true),
    ("robots.txt", "robots_txt", true),
    ("No robots.txt", "without_robots", true),
    ("Bytes sent", "bytes_sent", true),
    ("Last seen (UTC)", "last_seen", false),
    ("Last hour", "per_minute", false),
];

/// What the page's words mean (shown under the agent table).
const LEGEND: &str = "<strong>Requests</strong>: every request. <strong>Allowed</strong>: page requests passed to the origin with no \
violation; robots.txt and the other files crawlgate serves itself (agents.txt, tdmrep.json, the RSL license) are \
not in Allowed, robots.txt fetches have their own column. <strong>Violations</strong>: requests for a path the agent's group \
disallows, enforced or only logged. <strong>Blocked</strong>: requests crawlgate refused (robots, spoofed, \
unverified, bad-request, loop, replayed: hover the number). <strong>Limited</strong>: refused over a rate limit (429). \
<strong>Paid</strong>: charged requests (hover: how many were asked to pay, 402, instead). <strong>Spoofed</strong> / <strong>Verified</strong>: claims proven false / \
true. <strong>No robots.txt</strong>: page requests with no robots.txt fetch from the same agent and network in the preceding \
24 hours. The window counts Requests to No robots.txt; bytes and last seen count since the start. \
<strong>Last hour</strong>: requests per minute.";

/// The sparkline of a row: requests per minute, oldest first, as a
/// polyline scaled to its maximum.
fn sparkline(per_minute: &Value) -> String {
    let counts: Vec<u64> = rows(per_minute).iter().map(|v| v.as_u64().unwrap_or(0)).collect();
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let points: Vec<String> =
        counts.iter().enumerate().map(|(i, c)| format!("{i},{:.1}", 15.0 - 14.0 * *c as f64 / max as f64)).collect();
    format!(
        "<svg class=\"spark\" viewBox=\"0 0 {w} 16\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"requests per minute, last hour, at most {max}\"><polyline points=\"{}\"/></svg>",
        points.join(" "),
        w = counts.len().max(2) - 1,
    )
}

/// The breakdown of a row's blocks, for the Blocked cell's title.
fn reasons(blocked_by: &Value) -> String {
    let parts: Vec<String> = blocked_by
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
                .map(|(r, n)| format!("{} {}", esc(r), text(n)))
                .collect()
        })
        .unwrap_or_default();
    parts.join(", ")
}

fn agent_rows(agents: &Value) -> String {
    let mut out = String::new();
    for a in rows(&agents["agents"]) {
        let name = a["agent"].as_str().unwrap_or("");
        let _ = write!(out, "<tr data-agent=\"{}\">", esc(name));
        for (_, key, numeric) in AGENT_COLUMNS {
            let v = &a[*key];
            let class = if *numeric { " class=\"n\"" } else { "" };
            match *key {
                "agent" => {
                    let _ = write!(out, "<td data-v=\"{0}\" title=\"{1}\">{0}</td>", text(v), text(&a["category"]));
                }
                "operator" => {
                    let _ = write!(out, "<td class=\"op\" data-v=\"{0}\" title=\"{0}\">{0}</td>", text(v));
                }
                "blocked" => {
                    let _ = write!(
                        out,
                        "<td{class} data-v=\"{0}\" title=\"{1}\">{0}</td>",
                        text(v),
                        reasons(&a["blocked_by"])
                    );
                }
                "paid" => {
                    let _ = write!(
                        out,
                        "<td{class} data-v=\"{0}\" title=\"{1} asked to pay\">{0}</td>",
                        text(v),
                        text(&a["payment_required"])
                    );
                }
                "last_seen" => {
                    let _ = write!(out, "<td data-v=\"{}\">{}</td>", text(v), utc(v).trim_end_matches(" UTC"));
                }
                "bytes_sent" => {
                    let _ = write!(out, "<td{class} data-v=\"{}\">{}</td>", text(v), bytes(v));
                }
                "per_minute" => {
                    let sum: u64 = rows(v).iter().filter_map(Value::as_u64).sum();
                    let _ = write!(out, "<td data-v=\"{sum}\">{}</td>", sparkline(v));
                }
                _ => {
                    let _ = write!(out, "<td{class} data-v=\"{0}\">{0}</td>", text(v));
                }
            }
        }
        out.push_str("</tr>");
    }
    if out.is_empty() {
        let _ = write!(out, "<tr><td colspan=\"{}\">No requests yet.</td></tr>", AGENT_COLUMNS.len());
    }
    out
}

/// The chart: one polyline of the total per minute (a point per minute),
/// scaled to its maximum.
fn chart(timeline: &Value) -> String {
    let total: Vec<u64> = rows(&timeline["total"]).iter().map(|v| v.as_u64().unwrap_or(0)).collect();
    let max = total.iter().copied().max().unwrap_or(0).max(1);
    let n = total.len().max(2) - 1;
    let points: Vec<String> = total
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!("{:.1},{:.1}", 40.0 + 560.0 * i as f64 / n as f64, 150.0 - 140.0 * *c as f64 / max as f64)
        })
        .collect();
    format!(
        "<svg id=\"chart\" viewBox=\"0 0 600 170\" role=\"img\" aria-label=\"Requests per minute, last {m} minutes\">\
         <line x1=\"40\" y1=\"150\" x2=\"600\" y2=\"150\" class=\"axis\"/>\
         <line x1=\"40\" y1=\"10\" x2=\"40\" y2=\"150\" class=\"axis\"/>\
         <text x=\"36\" y=\"16\" text-anchor=\"end\" id=\"chart-max\">{max}</text>\
         <text x=\"36\" y=\"150\" text-anchor=\"end\">0</text>\
         <text x=\"40\" y=\"166\">-{m} min</text><text x=\"600\" y=\"166\" text-anchor=\"end\">now</text>\
         <polyline id=\"tl-total\" points=\"{pts}\"/></svg>",
        m = total.len(),
        pts = points.join(" "),
    )
}

/// The violations grouped by agent and rule: a row per group, its paths
/// in the rows under it.
fn violation_rows(violations: &Value) -> String {
    let mut out = String::new();
    for g in rows(&violations["groups"]) {
        let _ = write!(
            out,
            "<tr class=\"group\"><td>{}</td><td class=\"path\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            text(&g["agent"]),
            text(&g["rule"]),
            text(&g["line"]),
            text(&g["count"])
        );
        for p in rows(&g["paths"]) {
            let _ = write!(
                out,
                "<tr class=\"sub\"><td></td><td class=\"path\">{}</td><td></td><td class=\"n\">{}</td></tr>",
                text(&p["path"]),
                text(&p["count"])
            );
        }
    }
    if out.is_empty() {
        out.push_str("<tr><td colspan=\"4\">No violations.</td></tr>");
    }
    out
}

fn compliance_rows(compliance: &Value) -> String {
    let mut out = String::new();
    for c in rows(&compliance["clients"]) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            text(&c["agent"]),
            text(&c["network"]),
            text(&c["requests_without_robots"]),
            if c["robots_fetched_at"].is_null() { "never".to_string() } else { utc(&c["robots_fetched_at"]) }
        );
    }
    if out.is_empty() {
        out.push_str("<tr><td colspan=\"4\">Every crawler read robots.txt first.</td></tr>");
    }
    out
}

fn policy_block(status: &Value) -> String {
    let sha = status["content_sha256"].as_str().unwrap_or("");
    let error = match status["last_error"].as_str() {
        Some(e) => format!(
            "<p class=\"error\" id=\"policy-error\">Last reload failed at {}: <code>{}</code> (the previous policy stays in force)</p>",
            utc(&status["last_error_at"]),
            esc(e)
        ),
        None => "<p id=\"policy-error\"></p>".to_string(),
    };
    let mut upstreams = String::new();
    for u in rows(&status["upstreams"]) {
        let healthy = u["healthy"].as_bool().unwrap_or(false);
        let _ = write!(
            upstreams,
            "<li><span class=\"badge {}\">{}</span> {} <code>{}</code></li>",
            if healthy { "ok" } else { "bad" },
            if healthy { "healthy" } else { "unhealthy" },
            text(&u["server"]),
            text(&u["address"])
        );
    }
    // Web Bot Auth signature outcomes (with `[verification]` only).
    let signatures = match status["signatures"].as_object() {
        Some(s) => {
            let counts: Vec<String> = crawlgate_policy::verification::SignatureOutcome::ALL
                .iter()
                .map(|o| format!("{0} <span id=\"sig-{0}\">{1}</span>", o.as_str(), text(&s[o.as_str()])))
                .collect();
            format!("<h3>Web Bot Auth signatures</h3><p id=\"signatures\">{}</p>", counts.join(" · "))
        }
        None => String::new(),
    };
    format!(
        "<dl id=\"policy\"><dt>File</dt><dd><code>{}</code></dd><dt>SHA-256</dt><dd><code title=\"{}\">{}</code></dd>\
         <dt>Generation</dt><dd>{}</dd><dt>Loaded</dt><dd>{}</dd><dt>Groups</dt><dd>{}</dd><dt>Rules</dt><dd>{}</dd></dl>{error}\
         <h3>Upstream</h3><ul id=\"upstreams\">{upstreams}</ul>{signatures}",
        status["policy_file"].as_str().map_or("(embedded)".to_string(), esc),
        esc(sha),
        esc(sha.get(..12).unwrap_or(sha)),
        text(&status["generation"]),
        utc(&status["loaded_at"]),
        text(&status["groups_text"]),
        text(&status["rules"]),
    )
}

/// The counters the fleet table shows, with their headings.
const FLEET_COLUMNS: [(&str, &str); 3] =
    [("Requests", "requests"), ("Blocked", "blocked"), ("Violations", "violations")];

/// The fleet panel from `/api/agents`' `fleet` member: without a shared
/// store one line saying the page shows one instance; with one, how many
/// instances reported and each agent's counts here and fleet-wide.
fn fleet_block(fleet: &Value) -> String {
    let mut out = String::from("<h2>Fleet</h2>");
    if fleet["shared"] != Value::Bool(true) {
        let _ = write!(out, "<p id=\"fleet-summary\">{}</p>", text(&fleet["note"]));
        return out;
    }
    let store = if fleet["store_up"] == Value::Bool(true) {
        "<span class=\"badge ok\">store up</span>"
    } else {
        "<span class=\"badge bad\">store down</span>"
    };
    if fleet["current"] == Value::Bool(false) {
        // No frozen totals, no stale instance count: the note says since
        // when and that the page shows this instance only.
        let _ = write!(out, "<p id=\"fleet-summary\">{store} {}</p>", text(&fleet["note"]));
        return out;
    }
    let _ = write!(
        out,
        "<p id=\"fleet-summary\">{store} <span id=\"fleet-instances\">{}</span> instance(s) reported in the last minute. {}</p>",
        text(&fleet["instances"]),
        text(&fleet["note"]),
    );
    out.push_str("<div class=\"scroll\"><table id=\"fleet-agents\"><thead><tr><th>Agent</th>");
    for (h, _) in FLEET_COLUMNS {
        let _ = write!(out, "<th class=\"n\">{h} (this instance)</th><th class=\"n\">{h} (fleet)</th>");
    }
    out.push_str("</tr></thead><tbody>");
    let agents = rows(&fleet["agents"]);
    for a in agents {
        let _ = write!(out, "<tr><td>{}</td>", text(&a["agent"]));
        for (_, k) in FLEET_COLUMNS {
            let _ = write!(
                out,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td>",
                text(&a[k]["this"]),
                text(&a[k]["fleet"])
            );
        }
        out.push_str("</tr>");
    }
    if agents.is_empty() {
        let _ =
            write!(out, "<tr><td colspan=\"{}\">No requests in the fleet yet.</td></tr>", 1 + 2 * FLEET_COLUMNS.len());
    }
    out.push_str("</tbody></table></div>");
    out
}

const STYLE: &str = r#"
:root{--bg:#fff;--fg:#1b1f24;--muted:#5c6670;--line:#d8dee4;--card:#f6f8fa;--accent:#0969da;--ok:#1a7f37;--bad:#cf222e}
@media (prefers-color-scheme: dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9aa5b1;--line:#30363d;--card:#161b22;--accent:#58a6ff;--ok:#3fb950;--bad:#f85149}}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
header,main{max-width:1240px;margin:0 auto;padding:12px 16px}header h1{font-size:20px;margin:0}header p{margin:4px 0;color:var(--muted)}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 14px;margin:12px 0}
h2{font-size:16px;margin:0 0 8px}h3{font-size:14px;margin:10px 0 4px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:12px}.grid section{margin:0}
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%}th,td{padding:4px 6px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
#agents{font-size:13px}#agents th,#agents td{padding:4px 3px}#agents th{white-space:normal;vertical-align:bottom}td.op{max-width:150px;overflow:hidden;text-overflow:ellipsis}
tr.sub td{border-bottom:none;color:var(--muted)}tr.sub td.path{padding-left:22px}tr.group td{font-weight:600}
.legend{color:var(--muted);font-size:12px;margin:8px 0 0}nav#window a{margin:0 4px}nav#window a[aria-current]{font-weight:700;color:var(--fg);text-decoration:none}h2 nav{display:inline;font-size:13px;font-weight:400;margin-left:12px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td.path{white-space:normal;word-break:break-all}
th{cursor:pointer;user-select:none;color:var(--muted);font-weight:600}th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}dt{color:var(--muted)}dd{margin:0;word-break:break-all}
ul{margin:0;padding-left:18px}.badge{display:inline-block;padding:0 6px;border-radius:10px;color:#fff;font-size:12px}.ok{background:var(--ok)}.bad{background:var(--bad)}
.error{color:var(--bad)}code{font-size:13px}
#chart{width:100%;height:auto;max-height:220px}svg.spark{width:90px;height:18px;display:block}.spark polyline{stroke-width:1.5;vector-effect:non-scaling-stroke}svg text{fill:var(--muted);font-size:11px}.axis{stroke:var(--line)}polyline{fill:none;stroke:var(--accent);stroke-width:2}
@media (max-width:600px){header,main{padding:8px}th,td{padding:3px 5px}body{font-size:13px}}
"#;

// After each refresh the script records on `<body>` the document's width
// and how far the agent table overflows its box (`data-scroll-width`,
// `data-agents-overflow`): the headless-browser test checks the page fits
// a 1280 px window from them.
const SCRIPT: &str = r##"
(function(){
"use strict";
var COLS=__COLS__,WINDOW="__WINDOW__";
function esc(s){return String(s).replace(/[&<>"']/g,function(c){return {"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;","'":"&#39;"}[c];});}
function txt(v){if(v===null||v===undefined)return "";if(typeof v==="number")return Number.isInteger(v)?String(v):v.toFixed(1);return esc(v);}
function utc(v){if(!v)return "";var d=new Date(v*1000);function p(n){return (n<10?"0":"")+n;}
return d.getUTCFullYear()+"-"+p(d.getUTCMonth()+1)+"-"+p(d.getUTCDate())+" "+p(d.getUTCHours())+":"+p(d.getUTCMinutes())+":"+p(d.getUTCSeconds())+" UTC";}
function get(p){return fetch(p,{credentials:"same-origin",cache:"no-store"}).then(function(r){if(!r.ok)throw new Error(p+": "+r.status);return r.json();});}
var sortKey=null,sortDesc=true;
function spark(pm){pm=pm||[];var max=Math.max.apply(null,pm.concat([1]));var w=Math.max(pm.length,2)-1;
var pts=pm.map(function(c,i){return i+","+(15-14*c/max).toFixed(1);});
return '<svg class="spark" viewBox="0 0 '+w+' 16" preserveAspectRatio="none" role="img" aria-label="requests per minute, last hour, at most '+max+'"><polyline points="'+pts.join(" ")+'"/></svg>';}
function bytes(n){if(typeof n!=="number")return txt(n);if(n<10000)return String(n);var x=n,u=["K","M","G","T","P"];
for(var i=0;i<u.length;i++){x/=1024;if(x<999.95)return x.toFixed(1)+u[i];}return (x/1024).toFixed(1)+"E";}
function reasons(b){var out=[];Object.keys(b||{}).forEach(function(k){if(b[k]>0)out.push(esc(k)+" "+txt(b[k]));});return out.join(", ");}
function agentRows(d){var out="";(d.agents||[]).forEach(function(a){out+='<tr data-agent="'+esc(a.agent)+'">';
COLS.forEach(function(c){var k=c[1],v=a[k],cl=c[2]?' class="n"':"";
if(k==="agent")out+='<td data-v="'+txt(v)+'" title="'+txt(a.category)+'">'+txt(v)+"</td>";
else if(k==="operator")out+='<td class="op" data-v="'+txt(v)+'" title="'+txt(v)+'">'+txt(v)+"</td>";
else if(k==="blocked")out+="<td"+cl+' data-v="'+txt(v)+'" title="'+reasons(a.blocked_by)+'">'+txt(v)+"</td>";
else if(k==="paid")out+="<td"+cl+' data-v="'+txt(v)+'" title="'+txt(a.payment_required)+' asked to pay">'+txt(v)+"</td>";
else if(k==="last_seen")out+='<td data-v="'+txt(v)+'">'+utc(v).replace(/ UTC$/,"")+"</td>";
else if(k==="bytes_sent")out+="<td"+cl+' data-v="'+txt(v)+'">'+bytes(v)+"</td>";
else if(k==="per_minute"){var n=(v||[]).reduce(function(x,y){return x+y;},0);out+='<td data-v="'+n+'">'+spark(v)+"</td>";}
else out+="<td"+cl+' data-v="'+txt(v)+'">'+txt(v)+"</td>";});out+="</tr>";});
return out||'<tr><td colspan="'+COLS.length+'">No requests yet.</td></tr>';}
function violRows(v){var out="";(v.groups||[]).forEach(function(g){out+='<tr class="group"><td>'+txt(g.agent)+'</td><td class="path">'+txt(g.rule)+'</td><td class="n">'+txt(g.line)+'</td><td class="n">'+txt(g.count)+"</td></tr>";
(g.paths||[]).forEach(function(p){out+='<tr class="sub"><td></td><td class="path">'+txt(p.path)+'</td><td></td><td class="n">'+txt(p.count)+"</td></tr>";});});
return out||'<tr><td colspan="4">No violations.</td></tr>';}
function sortTable(){if(sortKey===null)return;var tb=document.querySelector("#agents tbody");var rs=Array.prototype.slice.call(tb.rows);
var num=COLS[sortKey][2]||COLS[sortKey][1]==="per_minute"||COLS[sortKey][1]==="last_seen";rs.sort(function(a,b){var x=a.cells[sortKey],y=b.cells[sortKey];if(!x||!y)return 0;x=x.getAttribute("data-v");y=y.getAttribute("data-v");
var c=num?(Number(x)-Number(y)):x.localeCompare(y);return sortDesc?-c:c;});rs.forEach(function(r){tb.appendChild(r);});
document.querySelectorAll("#agents th").forEach(function(th,i){if(i===sortKey)th.setAttribute("aria-sort",sortDesc?"descending":"ascending");else th.removeAttribute("aria-sort");});}
function chart(t){var tot=t.total||[];var max=Math.max.apply(null,tot.concat([1]));var n=Math.max(tot.length,2)-1;
var pts=tot.map(function(c,i){return (40+560*i/n).toFixed(1)+","+(150-140*c/max).toFixed(1);});
document.getElementById("tl-total").setAttribute("points",pts.join(" "));document.getElementById("chart-max").textContent=String(max);}
function fleetBlock(f){f=f||{};var out="<h2>Fleet</h2>";if(f.shared!==true)return out+'<p id="fleet-summary">'+txt(f.note)+"</p>";
var badge=f.store_up===true?'<span class="badge ok">store up</span>':'<span class="badge bad">store down</span>';if(f.current===false)return out+'<p id="fleet-summary">'+badge+" "+txt(f.note)+"</p>";
out+='<p id="fleet-summary">'+badge+' <span id="fleet-instances">'+txt(f.instances)+"</span> instance(s) reported in the last minute. "+txt(f.note)+"</p>";
var cols=[["Requests","requests"],["Blocked","blocked"],["Violations","violations"]];out+='<div class="scroll"><table id="fleet-agents"><thead><tr><th>Agent</th>';
cols.forEach(function(c){out+='<th class="n">'+c[0]+' (this instance)</th><th class="n">'+c[0]+" (fleet)</th>";});out+="</tr></thead><tbody>";
(f.agents||[]).forEach(function(a){out+="<tr><td>"+txt(a.agent)+"</td>";cols.forEach(function(c){var v=a[c[1]]||{};out+='<td class="n">'+txt(v.this)+'</td><td class="n">'+txt(v.fleet)+"</td>";});out+="</tr>";});
if(!(f.agents||[]).length)out+='<tr><td colspan="'+(1+2*cols.length)+'">No requests in the fleet yet.</td></tr>';return out+"</tbody></table></div>";}
__FIELD__
function rowsOf(list,f,empty,cols){var out="";(list||[]).forEach(function(x){out+=f(x);});return out||'<tr><td colspan="'+cols+'">'+empty+"</td></tr>";}
function refresh(){Promise.all([get("/api/agents?window="+WINDOW),get("/api/timeline?minutes=__MINUTES__"),get("/api/violations"),get("/api/compliance"),get("/api/referrals"),get("/status")]).then(function(r){
var a=r[0],t=r[1],v=r[2],c=r[3],f=r[4],s=r[5];
document.querySelector("#agents tbody").innerHTML=agentRows(a);sortTable();chart(t);document.getElementById("fleet").innerHTML=fleetBlock(a.fleet);
document.querySelector("#violations tbody").innerHTML=violRows(v);
document.querySelector("#compliance tbody").innerHTML=rowsOf(c.clients,function(x){return "<tr><td>"+txt(x.agent)+"</td><td>"+txt(x.network)+'</td><td class="n">'+txt(x.requests_without_robots)+"</td><td>"+(x.robots_fetched_at===null?"never":utc(x.robots_fetched_at))+"</td></tr>";},"Every crawler read robots.txt first.",4);
document.getElementById("field").innerHTML=fieldPanel(f,a.fleet);
document.getElementById("generation").textContent=String(s.generation);
var e=document.getElementById("policy-error");if(s.last_error){e.className="error";e.textContent="Last reload failed at "+utc(s.last_error_at)+": "+s.last_error+" (the previous policy stays in force)";}else{e.textContent="";}
if(s.signatures){["verified","legacy","invalid","expired","unknown_bot","replayed"].forEach(function(k){var n=document.getElementById("sig-"+k);if(n)n.textContent=txt(s.signatures[k]);});}
var u=document.getElementById("updated");u.textContent="updated "+utc(a.now);
var w=document.querySelector("#agents").parentNode,b=document.body;b.setAttribute("data-scroll-width",String(document.documentElement.scrollWidth));
b.setAttribute("data-agents-overflow",String(w.scrollWidth-w.clientWidth));b.setAttribute("data-live","1");
}).catch(function(err){document.getElementById("updated").textContent="refresh failed: "+err.message;});}
document.querySelectorAll("#agents th").forEach(function(th,i){th.addEventListener("click",function(){if(sortKey===i)sortDesc=!sortDesc;else{sortKey=i;sortDesc=COLS[i][2];}sortTable();});});
refresh();setInterval(refresh,__REFRESH__*1000);
})();
"##;

/// The whole page.
pub fn page(d: &Data<'_>) -> String {
    let cols: Vec<String> = AGENT_COLUMNS.iter().map(|(h, k, n)| format!("[\"{h}\",\"{k}\",{n}]")).collect();
    let window = d.agents["window"].as_str().and_then(Window::parse).unwrap_or(Window::All);
    let script = SCRIPT
        .replace("__FIELD__", crate::field::SCRIPT)
        .replace("__COLS__", &format!("[{}]", cols.join(",")))
        .replace("__WINDOW__", window.name())
        .replace("__MINUTES__", &chart_minutes(window).to_string())
        .replace("__REFRESH__", &REFRESH_SECONDS.to_string());
    let head: String =
        AGENT_COLUMNS.iter().map(|(h, _, n)| format!("<th{}>{h}</th>", if *n { " class=\"n\"" } else { "" })).collect();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"color-scheme\" content=\"light dark\"><meta name=\"robots\" content=\"noindex\">\
         <title>crawlgate: crawler activity</title><style>{STYLE}</style></head><body>\
         <header><h1>crawlgate: crawler activity</h1>\
         <p>Since {started}. Counts live in memory: a restart resets them, a policy reload keeps them. \
         Policy generation <span id=\"generation\">{generation}</span>. <span id=\"updated\">rendered {now}</span></p></header>\
         <main>\
         <div class=\"grid\"><section><h2>Policy</h2>{policy}</section>\
         <section><h2>Requests per minute</h2>{chart}</section></div>\
         <section><h2>Agents {nav}</h2><div class=\"scroll\"><table id=\"agents\"><thead><tr>{head}</tr></thead><tbody>{agents}</tbody></table></div>\
         <p class=\"legend\" id=\"legend\">{LEGEND}</p></section>\
         <section id=\"fleet\">{fleet}</section>\
         <section><h2>Top robots.txt violations</h2><p>By agent and rule, the paths under each (since the start).</p><div class=\"scroll\"><table id=\"violations\"><thead><tr><th>Agent</th><th>Rule / path</th><th class=\"n\">Line</th><th class=\"n\">Count</th></tr></thead><tbody>{violations}</tbody></table></div></section>\
         <div class=\"grid\"><section><h2>Crawling without robots.txt</h2><p>Page requests with no robots.txt fetch from the same agent and network in the preceding {window} hours.</p>\
         <div class=\"scroll\"><table id=\"compliance\"><thead><tr><th>Agent</th><th>Network</th><th class=\"n\">Requests</th><th>robots.txt fetched</th></tr></thead><tbody>{compliance}</tbody></table></div></section>\
         <section id=\"field\">{field}</section></div>\
         {charges}</main><script>{script}</script></body></html>\n",
        started = utc(&d.agents["started_at"]),
        generation = text(&d.status["generation"]),
        now = utc(&d.agents["now"]),
        policy = policy_block(d.status),
        chart = chart(d.timeline),
        nav = window_nav(window.name()),
        agents = agent_rows(d.agents),
        fleet = fleet_block(&d.agents["fleet"]),
        violations = violation_rows(d.violations),
        window = text(&d.compliance["window_hours"]),
        compliance = compliance_rows(d.compliance),
        charges = charge_section(d.charges),
        field = crate::field::panel(d.referrals, &d.agents["fleet"]),
    )
}

/// The charges per agent since the start (`/api/charges`), when the
/// policy charges: agent, charges, amount per currency.
fn charge_section(charges: &Value) -> String {
    if charges["charging"] != Value::Bool(true) {
        return String::new();
    }
    let mut body = String::new();
    for a in rows(&charges["agents"]) {
        let amounts: Vec<String> = rows(&a["amounts"]).iter().map(text).collect();
        let _ = write!(
            body,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            text(&a["agent"]),
            text(&a["charges"]),
            amounts.join(", ")
        );
    }
    if body.is_empty() {
        body = "<tr><td colspan=\"3\">No charges yet.</td></tr>".to_string();
    }
    format!(
        "<section><h2>Charges</h2><p>Charges recorded in the ledger per agent since the start (the ledger has them all: <code>crawlgate ledger summary</code>).</p>\
         <div class=\"scroll\"><table id=\"charges\"><thead><tr><th>Agent</th><th class=\"n\">Charges</th><th class=\"n\">Amount</th></tr></thead><tbody>{body}</tbody></table></div></section>"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn escapes_everything_from_requests() {
        let agents = json!({"started_at": 0, "now": 0, "window": "6h", "agents": [{
            "agent": "<script>alert(1)</script>", "category": "<i>", "operator": "a\"b", "requests": 1,
            "blocked": 2, "blocked_by": {"robots": 1, "<b>": 1, "spoofed": 0},
            "verification": {"verified": 0}, "last_seen": 0, "per_minute": [0, 4, 2]
        }]});
        let violations = json!({"groups": [{"agent": "<u>", "rule": "/'", "line": 3, "count": 1,
            "paths": [{"path": "/<img src=x onerror=alert(1)>", "count": 1}]}]});
        let empty = json!({});
        let html = page(&Data {
            status: &json!({"policy_file": "</code><b>", "generation": 1}),
            agents: &agents,
            timeline: &json!({"total": [0, 2, 1]}),
            violations: &violations,
            compliance: &empty,
            referrals: &empty,
            charges: &json!({"charging": true, "agents": [{"agent": "<s>", "charges": 3, "amounts": ["USD 0.03", "EUR <1>"]}]}),
        });
        assert!(html.contains("<table id=\"charges\"><thead><tr><th>Agent</th><th class=\"n\">Charges</th><th class=\"n\">Amount</th></tr></thead><tbody><tr><td>&lt;s&gt;</td><td class=\"n\">3</td><td class=\"n\">USD 0.03, EUR &lt;1&gt;</td></tr></tbody></table>"), "{html}");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<img"));
        assert!(!html.contains("<u>") && !html.contains("<i>") && !html.contains("<b>"));
        assert!(html.contains("<tr class=\"group\"><td>&lt;u&gt;</td><td class=\"path\">/&#39;</td><td class=\"n\">3</td><td class=\"n\">1</td></tr>\
             <tr class=\"sub\"><td></td><td class=\"path\">/&lt;img src=x onerror=alert(1)&gt;</td><td></td><td class=\"n\">1</td></tr>"), "{html}");
        assert!(html.contains("<td class=\"n\" data-v=\"2\" title=\"&lt;b&gt; 1, robots 1\">2</td>"), "{html}");
        assert!(html.contains("<td data-v=\"6\"><svg class=\"spark\" viewBox=\"0 0 2 16\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"requests per minute, last hour, at most 4\"><polyline points=\"0,15.0 1,1.0 2,8.0\"/></svg></td>"), "{html}");
        assert!(html.contains("<a href=\"?window=6h\" aria-current=\"page\">6 h</a>"), "{html}");
        assert!(html.contains("WINDOW=\"6h\"") && html.contains("/api/timeline?minutes=360"));
        assert!(!html.contains("</code><b>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("a&quot;b"));
        assert!(html.contains("<polyline id=\"tl-total\" points=\"40.0,150.0 320.0,10.0 600.0,80.0\"/>"));
    }

    #[test]
    fn byte_counts() {
        let b = |n: u64| bytes(&json!(n));
        assert_eq!([b(0), b(9_999), b(10_000), b(123_456_789), b(u64::MAX)], ["0", "9999", "9.8K", "117.7M", "16.0E"]);
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(&json!(0)), "");
        assert_eq!(utc(&json!(951_782_400)), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(&json!(1_795_000_000)), "2026-11-18 11:06:40 UTC");
    }

    #[test]
    fn fleet_panel_one_instance_or_the_fleet_beside_this_one() {
        assert_eq!(
            fleet_block(&crawlgate_telemetry::fleet::single_instance_json()),
            "<h2>Fleet</h2><p id=\"fleet-summary\">This page shows one instance: no shared store ([limits] store) is configured.</p>"
        );
        let fleet = json!({"shared": true, "store_up": false, "instances": 3, "note": "n", "agents": [
            {"agent": "<b>", "requests": {"this": 1, "fleet": 7}, "blocked": {"this": 0, "fleet": 2}, "violations": {"this": 0, "fleet": 0}}
        ]});
        assert_eq!(
            fleet_block(&fleet),
            "<h2>Fleet</h2><p id=\"fleet-summary\"><span class=\"badge bad\">store down</span> <span id=\"fleet-instances\">3</span> instance(s) reported in the last minute. n</p>\
             <div class=\"scroll\"><table id=\"fleet-agents\"><thead><tr><th>Agent</th>\
             <th class=\"n\">Requests (this instance)</th><th class=\"n\">Requests (fleet)</th>\
             <th class=\"n\">Blocked (this instance)</th><th class=\"n\">Blocked (fleet)</th>\
             <th class=\"n\">Violations (this instance)</th><th class=\"n\">Violations (fleet)</th></tr></thead><tbody>\
             <tr><td>&lt;b&gt;</td><td class=\"n\">1</td><td class=\"n\">7</td><td class=\"n\">0</td><td class=\"n\">2</td><td class=\"n\">0</td><td class=\"n\">0</td></tr>\
             </tbody></table></div>"
        );
        let stale = json!({"shared": true, "store_up": false, "current": false, "agents": [],
            "note": "Fleet totals unavailable since 14:02 UTC (store down); showing this instance only."});
        assert_eq!(
            fleet_block(&stale),
            "<h2>Fleet</h2><p id=\"fleet-summary\"><span class=\"badge bad\">store down</span> \
             Fleet totals unavailable since 14:02 UTC (store down); showing this instance only.</p>"
        );
    }
}
