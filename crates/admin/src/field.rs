//! The dashboard's panel of the field's numbers (issue 35): visitors from
//! AI products, each crawler operator's crawl-to-referral ratio over 24
//! hours, 7 days and 30 days next to the bytes its crawlers took (this
//! instance, and the fleet's over the page's window when a store is
//! configured), and Markdown requested against served. Rendered on the
//! server from `/api/referrals` and `/api/agents`' `fleet`; the page's
//! script redraws it with [`SCRIPT`]'s functions, which write the same
//! markup.

use std::fmt::Write;

use serde_json::Value;

use crate::dashboard::{bytes, esc, rows, text};

/// The ratio windows `/api/referrals` counts, with their headings.
const WINDOWS: [(&str, &str); 3] = [("24h", "24 h"), ("7d", "7 d"), ("30d", "30 d")];

/// `crawls:referrals` as the field writes it: `1276:1` (one decimal below
/// 10), `35:0` with no referral yet, `–` with neither.
pub fn ratio(w: &Value) -> String {
    let crawls = w["crawl_requests"].as_u64().unwrap_or(0);
    match w["crawls_per_referral"].as_f64() {
        Some(r) if r < 10.0 => format!("{r:.1}:1"),
        Some(r) => format!("{r:.0}:1"),
        None if crawls > 0 => format!("{crawls}:0"),
        None => "–".to_string(),
    }
}

/// A ratio cell: the ratio, its counts in the title.
fn ratio_cell(w: &Value) -> String {
    format!(
        "<td class=\"n\" title=\"{} crawl requests, {} referrals\">{}</td>",
        text(&w["crawl_requests"]),
        text(&w["referrals"]),
        esc(&ratio(w))
    )
}

/// The products table's rows.
fn product_rows(referrals: &Value) -> String {
    let mut out = String::new();
    for p in rows(&referrals["products"]) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            text(&p["product"]),
            text(&p["operator"]),
            text(&p["referrals"])
        );
    }
    if out.is_empty() {
        out.push_str("<tr><td colspan=\"3\">No visitors from AI products yet.</td></tr>");
    }
    out
}

/// The operators table's rows: per window the ratio, then per window the
/// bytes.
fn operator_rows(referrals: &Value) -> String {
    let mut out = String::new();
    for o in rows(&referrals["operators"]) {
        let _ = write!(out, "<tr><td>{}</td>", text(&o["operator"]));
        for (k, _) in WINDOWS {
            out.push_str(&ratio_cell(&o["windows"][k]));
        }
        for (k, _) in WINDOWS {
            let b = &o["windows"][k]["bytes_sent"];
            let _ = write!(out, "<td class=\"n\">{}</td>", bytes(b));
        }
        out.push_str("</tr>");
    }
    if out.is_empty() {
        let _ = write!(
            out,
            "<tr><td colspan=\"{}\">No crawls or referrals by these operators yet.</td></tr>",
            1 + 2 * WINDOWS.len()
        );
    }
    out
}

/// The fleet's ratios over the page's window (`fleet.referrals`), or
/// nothing without a current fleet view.
fn fleet_rows(fleet: &Value) -> String {
    if fleet["shared"] != Value::Bool(true) || fleet["current"] == Value::Bool(false) {
        return String::new();
    }
    let mut body = String::new();
    for o in rows(&fleet["referrals"]) {
        let _ = write!(body, "<tr><td>{}</td>{}</tr>", text(&o["operator"]), ratio_cell(o));
    }
    if body.is_empty() {
        body.push_str("<tr><td colspan=\"2\">No crawls or referrals in the fleet yet.</td></tr>");
    }
    format!(
        "<h3>Fleet-wide, last {} min</h3><div class=\"scroll\"><table id=\"fleet-operators\"><thead><tr><th>Operator</th>\
         <th class=\"n\">Crawls per referral</th></tr></thead><tbody>{body}</tbody></table></div>",
        text(&fleet["window_minutes"])
    )
}

/// Markdown requested against served: the totals, then per agent.
fn markdown_block(referrals: &Value, fleet: &Value) -> String {
    let md = &referrals["markdown"];
    let mut body = String::new();
    for a in rows(&md["agents"]) {
        let _ = write!(
            body,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            text(&a["agent"]),
            text(&a["requested"]),
            text(&a["served"])
        );
    }
    if body.is_empty() {
        body.push_str("<tr><td colspan=\"3\">No request asked for Markdown yet.</td></tr>");
    }
    let sum = |key: &str| -> u64 { rows(&fleet["agents"]).iter().filter_map(|a| a[key]["fleet"].as_u64()).sum() };
    let fleet_line = if fleet["shared"] == Value::Bool(true) && fleet["current"] != Value::Bool(false) {
        format!(
            " Fleet, last {} min: requested <span id=\"md-fleet-requested\">{}</span>, served <span id=\"md-fleet-served\">{}</span>.",
            text(&fleet["window_minutes"]),
            sum("markdown_requested"),
            sum("markdown_served")
        )
    } else {
        String::new()
    };
    format!(
        "<h3>Markdown requested and served</h3><p id=\"markdown-summary\">Requested <span id=\"md-requested\">{}</span>, \
         served <span id=\"md-served\">{}</span> (since the start; the others were refused by the page's rules or \
         not converted).{fleet_line}</p><div class=\"scroll\"><table id=\"markdown\"><thead><tr><th>Agent</th>\
         <th class=\"n\">Requested</th><th class=\"n\">Served</th></tr></thead><tbody>{body}</tbody></table></div>",
        text(&md["requested"]),
        text(&md["served"]),
    )
}

/// The panel's inner markup (inside `<section id="field">`).
pub fn panel(referrals: &Value, fleet: &Value) -> String {
    let mut head = String::from("<tr><th>Operator</th>");
    for (_, h) in WINDOWS {
        let _ = write!(head, "<th class=\"n\">Crawls per referral, {h}</th>");
    }
    for (_, h) in WINDOWS {
        let _ = write!(head, "<th class=\"n\">Bytes, {h}</th>");
    }
    head.push_str("</tr>");
    format!(
        "<h2>Visitors from AI products</h2><div class=\"scroll\"><table id=\"products\"><thead><tr><th>Product</th>\
         <th>Operator</th><th class=\"n\">Referrals</th></tr></thead><tbody>{}</tbody></table></div>\
         <h3>Crawling against referrals</h3><p>Per crawler operator: its crawlers' requests for each visitor its AI \
         products sent (the crawl-to-referral ratio), and the bytes they took.</p>\
         <div class=\"scroll\"><table id=\"operators\"><thead>{head}</thead><tbody>{}</tbody></table></div>{}{}",
        product_rows(referrals),
        operator_rows(referrals),
        fleet_rows(fleet),
        markdown_block(referrals, fleet),
    )
}

/// The script's side: `fieldPanel(referrals, fleet)` returns what
/// [`panel`] renders (it uses the page script's `esc`, `txt` and
/// `bytes`).
pub const SCRIPT: &str = r##"
function ratio(w){w=w||{};var c=w.crawl_requests||0,r=w.crawls_per_referral;if(typeof r==="number")return r<10?r.toFixed(1)+":1":r.toFixed(0)+":1";return c>0?c+":0":"–";}
function ratioCell(w){w=w||{};return '<td class="n" title="'+txt(w.crawl_requests)+" crawl requests, "+txt(w.referrals)+' referrals">'+esc(ratio(w))+"</td>";}
function fieldPanel(f,fl){f=f||{};fl=fl||{};var W=[["24h","24 h"],["7d","7 d"],["30d","30 d"]];
var out='<h2>Visitors from AI products</h2><div class="scroll"><table id="products"><thead><tr><th>Product</th><th>Operator</th><th class="n">Referrals</th></tr></thead><tbody>';
var p="";(f.products||[]).forEach(function(x){p+="<tr><td>"+txt(x.product)+"</td><td>"+txt(x.operator)+'</td><td class="n">'+txt(x.referrals)+"</td></tr>";});
out+=(p||'<tr><td colspan="3">No visitors from AI products yet.</td></tr>')+"</tbody></table></div>";
out+='<h3>Crawling against referrals</h3><p>Per crawler operator: its crawlers\' requests for each visitor its AI products sent (the crawl-to-referral ratio), and the bytes they took.</p><div class="scroll"><table id="operators"><thead><tr><th>Operator</th>';
W.forEach(function(w){out+='<th class="n">Crawls per referral, '+w[1]+"</th>";});W.forEach(function(w){out+='<th class="n">Bytes, '+w[1]+"</th>";});out+="</tr></thead><tbody>";
var o="";(f.operators||[]).forEach(function(x){var ws=x.windows||{};o+="<tr><td>"+txt(x.operator)+"</td>";W.forEach(function(w){o+=ratioCell(ws[w[0]]);});
W.forEach(function(w){o+='<td class="n">'+bytes((ws[w[0]]||{}).bytes_sent)+"</td>";});o+="</tr>";});
out+=(o||'<tr><td colspan="'+(1+2*W.length)+'">No crawls or referrals by these operators yet.</td></tr>')+"</tbody></table></div>";
var live=fl.shared===true&&fl.current!==false;
if(live){var r="";(fl.referrals||[]).forEach(function(x){r+="<tr><td>"+txt(x.operator)+"</td>"+ratioCell(x)+"</tr>";});
out+="<h3>Fleet-wide, last "+txt(fl.window_minutes)+' min</h3><div class="scroll"><table id="fleet-operators"><thead><tr><th>Operator</th><th class="n">Crawls per referral</th></tr></thead><tbody>'+(r||'<tr><td colspan="2">No crawls or referrals in the fleet yet.</td></tr>')+"</tbody></table></div>";}
var md=f.markdown||{},m="";(md.agents||[]).forEach(function(a){m+="<tr><td>"+txt(a.agent)+'</td><td class="n">'+txt(a.requested)+'</td><td class="n">'+txt(a.served)+"</td></tr>";});
var fline="";if(live){var s=function(k){return (fl.agents||[]).reduce(function(n,a){return n+((a[k]||{}).fleet||0);},0);};
fline=" Fleet, last "+txt(fl.window_minutes)+' min: requested <span id="md-fleet-requested">'+s("markdown_requested")+'</span>, served <span id="md-fleet-served">'+s("markdown_served")+"</span>.";}
out+='<h3>Markdown requested and served</h3><p id="markdown-summary">Requested <span id="md-requested">'+txt(md.requested)+'</span>, served <span id="md-served">'+txt(md.served)+"</span> (since the start; the others were refused by the page's rules or not converted)."+fline+'</p><div class="scroll"><table id="markdown"><thead><tr><th>Agent</th><th class="n">Requested</th><th class="n">Served</th></tr></thead><tbody>'+(m||'<tr><td colspan="3">No request asked for Markdown yet.</td></tr>')+"</tbody></table></div>";
return out;}
"##;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ratios_as_the_field_writes_them() {
        let w = |c: u64, r: Option<f64>| json!({"crawl_requests": c, "crawls_per_referral": r});
        assert_eq!(
            [ratio(&w(23_951, Some(23_951.0))), ratio(&w(5, Some(5.0))), ratio(&w(35, None)), ratio(&w(0, None))],
            ["23951:1", "5.0:1", "35:0", "–"]
        );
    }

    #[test]
    fn the_panel_shows_each_window_and_escapes() {
        let win = |c: u64, r: u64, b: u64| json!({"crawl_requests": c, "referrals": r, "crawls_per_referral": (r > 0).then(|| c as f64 / r as f64), "bytes_sent": b});
        let referrals = json!({
            "products": [{"product": "<P>", "operator": "OpenAI", "referrals": 2}],
            "operators": [{"operator": "<O>", "windows": {"24h": win(100, 2, 2048), "7d": win(700, 0, 20_480), "30d": win(0, 0, 0)}}],
            "markdown": {"requested": 3, "served": 2, "agents": [{"agent": "<a>", "requested": 3, "served": 2}]}
        });
        let fleet = json!({"shared": true, "current": true, "window_minutes": 60,
            "referrals": [{"operator": "OpenAI", "crawl_requests": 9, "referrals": 3, "crawls_per_referral": 3.0}],
            "agents": [{"agent": "GPTBot", "markdown_requested": {"this": 1, "fleet": 4}, "markdown_served": {"this": 1, "fleet": 3}}]});
        let html = panel(&referrals, &fleet);
        assert!(
            html.contains("<tbody><tr><td>&lt;P&gt;</td><td>OpenAI</td><td class=\"n\">2</td></tr></tbody>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<tr><td>&lt;O&gt;</td><td class=\"n\" title=\"100 crawl requests, 2 referrals\">50:1</td>\
                 <td class=\"n\" title=\"700 crawl requests, 0 referrals\">700:0</td>\
                 <td class=\"n\" title=\"0 crawl requests, 0 referrals\">–</td>\
                 <td class=\"n\">2048</td><td class=\"n\">20.0K</td><td class=\"n\">0</td></tr>"
            ),
            "{html}"
        );
        assert!(html.contains("<h3>Fleet-wide, last 60 min</h3>"), "{html}");
        assert!(
            html.contains("<tr><td>OpenAI</td><td class=\"n\" title=\"9 crawl requests, 3 referrals\">3.0:1</td></tr>")
        );
        assert!(html.contains("Requested <span id=\"md-requested\">3</span>, served <span id=\"md-served\">2</span>"));
        assert!(html.contains(
            "requested <span id=\"md-fleet-requested\">4</span>, served <span id=\"md-fleet-served\">3</span>"
        ));
        assert!(html.contains("<tr><td>&lt;a&gt;</td><td class=\"n\">3</td><td class=\"n\">2</td></tr>"), "{html}");
        // One instance: no fleet table, no fleet Markdown line.
        let one = panel(&referrals, &json!({"shared": false}));
        assert!(!one.contains("fleet-operators") && !one.contains("md-fleet"), "{one}");
    }
}
