//! Type errors that name the key: serde reports `invalid type: string
//! "0.0.0.0:80", expected a sequence` with the value's span only, so the
//! file is read again as a tree of spanned values to find the key path at
//! that span, and the message names the key, the type it wants with an
//! example, and the type found.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

/// A TOML value with the spans of its children, only its shape kept.
enum Node {
    Table(Vec<(String, Spanned<Node>)>),
    Array(Vec<Spanned<Node>>),
    Scalar,
}

struct NodeVisitor;

macro_rules! scalar {
    ($($f:ident: $t:ty),*) => {
        $(fn $f<E>(self, _: $t) -> Result<Node, E> { Ok(Node::Scalar) })*
    };
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a TOML value")
    }

    scalar!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut out = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Spanned<Node>>()? {
            out.push((k, v));
        }
        Ok(Node::Table(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Spanned<Node>>()? {
            out.push(v);
        }
        Ok(Node::Array(out))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

/// The key path (table keys joined with `.`, array indices left out, so
/// every `[[group]]` is `group`) of the value at `offset`, and whether the
/// value there is an element of an array under that key.
fn key_at(source: &str, offset: usize) -> Option<(String, bool)> {
    let Ok(Node::Table(mut entries)) = toml::from_str::<Node>(source) else { return None };
    let mut path: Vec<String> = Vec::new();
    let mut in_array = false;
    loop {
        let contains = |n: &Spanned<Node>| n.span().start <= offset && offset < n.span().end.max(n.span().start + 1);
        let Some((key, node)) = entries.into_iter().find(|(_, n)| contains(n)) else { break };
        path.push(key);
        in_array = false;
        let mut node = node.into_inner();
        while let Node::Array(items) = node {
            match items.into_iter().find(|n| contains(n)) {
                Some(n) => {
                    in_array = true;
                    node = n.into_inner();
                }
                None => {
                    node = Node::Scalar;
                    break;
                }
            }
        }
        match node {
            Node::Table(t) => {
                entries = t;
                in_array = false;
            }
            _ => break,
        }
    }
    (!path.is_empty()).then(|| (path.join("."), in_array))
}

/// The table holding the key at `offset`, as a path with 1-based indices
/// for arrays of tables (`group[2]`, the second `[[group]]`); empty for the
/// top level. `None` when the file does not parse as TOML.
fn table_at(source: &str, offset: usize) -> Option<String> {
    let Ok(Node::Table(mut entries)) = toml::from_str::<Node>(source) else { return None };
    let mut path: Vec<String> = Vec::new();
    loop {
        let contains = |n: &Spanned<Node>| n.span().start <= offset && offset < n.span().end;
        let Some((key, node)) = entries.into_iter().find(|(_, n)| contains(n)) else { break };
        let mut key = key;
        let mut node = node.into_inner();
        while let Node::Array(items) = node {
            match items.into_iter().enumerate().find(|(_, n)| contains(n)) {
                Some((i, n)) => {
                    key = format!("{key}[{}]", i + 1);
                    node = n.into_inner();
                }
                None => {
                    node = Node::Scalar;
                    break;
                }
            }
        }
        path.push(key);
        match node {
            Node::Table(t) => entries = t,
            _ => break,
        }
    }
    Some(path.join("."))
}

/// The rate limit keys of a `[[group]]`, often written in `[limits]`.
const GROUP_LIMIT_KEYS: &[&str] = &["rate", "rates", "burst", "rate_mode", "rate_max_delay", "enforce_crawl_delay"];

/// The message for serde's `unknown field `x`, expected one of `a`, `b``
/// at `offset`: the key's table path (`group[2].dissallow`), the closest
/// valid key, and for `allow_warnings` inside a table, that it is a
/// top-level key. `None` when `message` is not about an unknown field.
pub(crate) fn describe_unknown(source: &str, offset: usize, message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, rest) = rest.split_once('`')?;
    let valid: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let table = table_at(source, offset)?;
    let at = if table.is_empty() { key.to_string() } else { format!("{table}.{key}") };
    if key == "allow_warnings" && !table.is_empty() {
        return Some(format!(
            "{at}: allow_warnings is a top-level key, but here it is read as a key of [{}]: move it above the file's first table header",
            table.split(['.', '[']).next().unwrap_or(&table)
        ));
    }
    let keys = valid.join(", ");
    if table == "limits" && GROUP_LIMIT_KEYS.contains(&key) {
        return Some(format!(
            "{at}: unknown key: `{key}` is set per crawler group, in its [[group]] table (e.g. `rate = \"1/s\"` \
             under `user_agents`); [limits] holds what every group's limits share (valid here: {keys})"
        ));
    }
    Some(match crate::validate::closest(key, valid.iter().copied(), 3) {
        Some(near) => format!("{at}: unknown key; did you mean `{near}`? (valid here: {keys})"),
        None => format!("{at}: unknown key (valid here: {keys})"),
    })
}

/// The message for a key written under a `[[group.prices]]` header that
/// was meant for the group (a duplicate `price`, an unknown
/// `user_agents`): TOML gives every key after a header to that header's
/// table, here the price entry. `None` for any other error.
pub(crate) fn describe_sub_table(source: &str, offset: usize, message: &str) -> Option<String> {
    let rest = message.strip_prefix("duplicate key `").or_else(|| message.strip_prefix("unknown field `"))?;
    let key = rest.split('`').next()?;
    let before = source.get(..offset)?;
    let header = before.lines().rev().map(str::trim).find(|l| l.starts_with('['))?;
    let header: String = header.split('#').next()?.chars().filter(|c| !c.is_whitespace()).collect();
    (header == "[[group.prices]]").then(|| {
        format!(
            "group.prices.{key}: `{key}` is read as a key of the [[group.prices]] entry above it (every key after \
             a table header belongs to that table): write the group's own keys (user_agents, price, ...) before \
             its first [[group.prices]]"
        )
    })
}

/// The offset of the value of the key at `path` (table keys, e.g.
/// `["verification", "state_dir"]`); `None` when it is not written.
pub(crate) fn value_offset(source: &str, path: &[&str]) -> Option<usize> {
    let Ok(Node::Table(mut entries)) = toml::from_str::<Node>(source) else { return None };
    let (last, tables) = path.split_last()?;
    for key in tables {
        let (_, node) = entries.into_iter().find(|(k, _)| k == key)?;
        match node.into_inner() {
            Node::Table(t) => entries = t,
            _ => return None,
        }
    }
    entries.into_iter().find(|(k, _)| k == last).map(|(_, n)| n.span().start)
}

/// What the key at `path` holds and an example, for the keys of the policy.
fn expected(path: &str) -> Option<(&'static str, &'static str)> {
    const STRINGS: &str = "an array of strings";
    const DURATION: &str = "a duration string";
    Some(match path {
        "server" => ("a table", "[server]"),
        "server.listen" => (STRINGS, r#"listen = ["0.0.0.0:8080"]"#),
        "server.h2c" => ("a boolean", "h2c = true"),
        "server.tls_listen" => (STRINGS, r#"tls_listen = ["0.0.0.0:8443"]"#),
        "server.tls_cert" => ("a string", r#"tls_cert = "/etc/crawlgate/cert.pem""#),
        "server.tls_key" => ("a string", r#"tls_key = "/etc/crawlgate/key.pem""#),
        "server.admin" => ("a string", r#"admin = "127.0.0.1:9090""#),
        "server.threads" => ("an integer", "threads = 2"),
        "server.grace_period" => (DURATION, r#"grace_period = "5s""#),
        "server.access_log" => ("a boolean", "access_log = true"),
        "server.access_log_sample" => ("a number between 0 and 1", "access_log_sample = 0.1"),
        "server.client_idle_timeout" => (DURATION, r#"client_idle_timeout = "60s""#),
        "server.client_header_timeout" => (DURATION, r#"client_header_timeout = "10s""#),
        "server.client_body_timeout" => (DURATION, r#"client_body_timeout = "60s""#),
        "server.max_connections" => ("an integer", "max_connections = 4096"),
        "server.proxy_protocol" => ("a boolean", "proxy_protocol = true"),
        "server.trusted_proxies" => (STRINGS, r#"trusted_proxies = ["10.0.0.0/8"]"#),
        "server.client_address_header" => ("a string", r#"client_address_header = "x-forwarded-for""#),
        "upstream" => ("a table", "[upstream]"),
        "upstream.servers" => (STRINGS, r#"servers = ["127.0.0.1:8000"]"#),
        "upstream.tls" => ("a boolean", "tls = true"),
        "upstream.sni" => ("a string", r#"sni = "origin.example.com""#),
        "upstream.verify_cert" => ("a boolean", "verify_cert = true"),
        "upstream.connect_timeout" => (DURATION, r#"connect_timeout = "5s""#),
        "upstream.read_timeout" => (DURATION, r#"read_timeout = "30s""#),
        "upstream.health_check_interval" => (DURATION, r#"health_check_interval = "5s""#),
        "upstream.content_usage" => ("a string", r#"content_usage = "keep""#),
        "robots_txt" => ("a table", "[robots_txt]"),
        "robots_txt.sitemaps" => (STRINGS, r#"sitemaps = ["https://www.example.com/sitemap.xml"]"#),
        "robots_txt.cache_max_age" => (DURATION, r#"cache_max_age = "1h""#),
        "robots_txt.content_signal" => ("a string", r#"content_signal = "search=yes, ai-train=no""#),
        "robots_txt.acap" => ("a boolean", "acap = true"),
        "group" => ("an array of tables", "[[group]]"),
        "group.name" => ("a string", r#"name = "ai-training""#),
        "group.user_agents" => (STRINGS, r#"user_agents = ["GPTBot", "CCBot"]"#),
        "group.categories" => (STRINGS, r#"categories = ["ai-training"]"#),
        "group.allow" => (STRINGS, r#"allow = ["/public/"]"#),
        "group.disallow" => (STRINGS, r#"disallow = ["/private/"]"#),
        "group.content_usage" => (STRINGS, r#"content_usage = ["train-ai=n, search=y"]"#),
        "group.app_directives" => (STRINGS, r#"app_directives = ["examplesearch;widgets=?0"]"#),
        "group.enforce" => ("a string", r#"enforce = "log""#),
        "group.block_status" => ("an integer", "block_status = 403"),
        "robots_tag" => ("an array of tables", "[[robots_tag]]"),
        "robots_tag.path" => ("a string", r#"path = "/drafts/""#),
        "robots_tag.agents" => (STRINGS, r#"agents = ["GPTBot"]"#),
        "robots_tag.rules" => (STRINGS, r#"rules = ["noindex", "nosnippet"]"#),
        "robots_tag.header" => ("a boolean", "header = true"),
        "robots_tag.html" => ("a string", r#"html = "inject""#),
        "agents_txt" => ("a table", "[agents_txt]"),
        "agents_txt.enabled" => ("a boolean", "enabled = true"),
        "agents_txt.rules" => ("an array of tables", r#"rules = [{ path = "/", action = "allow" }]"#),
        "agents_txt.rules.path" => ("a string", r#"path = "/api/""#),
        "agents_txt.rules.action" => ("a string", r#"action = "allow""#),
        "agents_txt.rules.params" => ("a table of strings", r#"params = { limit = "60" }"#),
        "verification" => ("a table", "[verification]"),
        "verification.trusted_proxies" => (STRINGS, r#"trusted_proxies = ["10.0.0.0/8"]"#),
        "allow_warnings" => (STRINGS, r#"allow_warnings = ["robots-only-token"]"#),
        _ => return None,
    })
}

/// The TOML type a serde `unexpected` text names (`string "x"`,
/// `integer `8``, `sequence`, `map`...), with its article.
fn toml_type(unexpected: &str) -> &'static str {
    let word = unexpected.split([' ', '`']).next().unwrap_or("");
    match word {
        "string" | "char" => "a string",
        "integer" => "an integer",
        "floating" => "a float",
        "boolean" => "a boolean",
        "sequence" => "an array",
        "map" => "a table",
        _ => "a value of another type",
    }
}

/// The key-naming message for a serde type error at `offset`, or `None`
/// when `message` is not a type error or no key is found there.
pub(crate) fn describe(source: &str, offset: usize, message: &str) -> Option<String> {
    let rest = message.strip_prefix("invalid type: ")?;
    let (found, wanted) = rest.split_once(", expected ")?;
    let (path, in_array) = key_at(source, offset)?;
    let found = toml_type(found);
    let found = if in_array { format!("an array holding {found}") } else { found.to_string() };
    Some(match expected(&path) {
        Some((what, example)) => format!("{path}: expected {what}, e.g. {example}, found {found}"),
        None => format!("{path}: expected {wanted}, found {found}"),
    })
}

#[cfg(test)]
mod tests {
    fn first_error(src: &str) -> String {
        match crate::load(src, "p.toml") {
            Ok(_) => String::from("loaded"),
            Err(e) => e.0.first().map(ToString::to_string).unwrap_or_default(),
        }
    }

    #[test]
    fn unknown_keys_name_their_table_and_the_closest_key() {
        let up = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";
        assert_eq!(
            first_error(&format!(
                "{up}[[group]]\nuser_agents = [\"*\"]\n\n[[group]]\nuser_agents = [\"a\"]\ndissallow = [\"/\"]\n"
            )),
            "p.toml:8:1: group[2].dissallow: unknown key; did you mean `disallow`? (valid here: name, user_agents, \
             categories, allow, disallow, crawl_delay, content_usage, app_directives, enforce, block_status, verify, \
             on_spoofed, on_unverified, rate, burst, enforce_crawl_delay, rate_mode, rate_max_delay, price, prices, rates)"
        );
        assert_eq!(
            first_error(&format!("{up}allow_warnings = [\"weaker-than-star\"]\n")),
            "p.toml:3:1: upstream.allow_warnings: allow_warnings is a top-level key, but here it is read as a key \
             of [upstream]: move it above the file's first table header"
        );
        assert_eq!(
            first_error(&format!("{up}tmeout = \"1s\"\n")),
            "p.toml:3:1: upstream.tmeout: unknown key (valid here: servers, tls, sni, verify_cert, connect_timeout, \
             read_timeout, health_check_interval, content_usage)"
        );
        assert_eq!(
            first_error(&format!("{up}[limits]\nrate = \"1/s\"\n")),
            "p.toml:4:1: limits.rate: unknown key: `rate` is set per crawler group, in its [[group]] table (e.g. \
             `rate = \"1/s\"` under `user_agents`); [limits] holds what every group's limits share (valid here: \
             store, key_prefix, timeout, ipv4_prefix, ipv6_prefix, max_keys)"
        );
        let prices = "[[group.prices]]\npath = \"/a/\"\nprice = \"USD 0.02\"\n";
        assert_eq!(
            first_error(&format!("{up}[[group]]\n{prices}user_agents = [\"GPTBot\"]\nprice = \"USD 0.01\"\n")),
            "p.toml:8:1: group.prices.price: `price` is read as a key of the [[group.prices]] entry above it (every \
             key after a table header belongs to that table): write the group's own keys (user_agents, price, ...) \
             before its first [[group.prices]]"
        );
        assert_eq!(
            first_error(&format!("{up}[[group]]\n[[ group.prices ]] # per path\npath = \"/a/\"\nprice = \"USD 0.02\"\nuser_agents = [\"GPTBot\"]\n")),
            "p.toml:7:1: group.prices.user_agents: `user_agents` is read as a key of the [[group.prices]] entry \
             above it (every key after a table header belongs to that table): write the group's own keys \
             (user_agents, price, ...) before its first [[group.prices]]"
        );
        assert_eq!(
            first_error(&format!("sever = 1\n{up}")),
            "p.toml:1:1: sever: unknown key; did you mean `server`? (valid here: server, upstream, robots_txt, \
             group, robots_tag, agents_txt, verification, tdmrep, rsl, payment, allow_warnings, limits, markdown, \
             classes)"
        );
    }

    #[test]
    fn names_the_key_and_the_types() {
        let up = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";
        assert_eq!(
            first_error(&format!("[server]\nlisten = \"0.0.0.0:80\"\n{up}")),
            "p.toml:2:10: server.listen: expected an array of strings, e.g. listen = [\"0.0.0.0:8080\"], found a string"
        );
        assert_eq!(
            first_error(&format!("[server]\nlisten = [80]\n{up}")),
            "p.toml:2:11: server.listen: expected an array of strings, e.g. listen = [\"0.0.0.0:8080\"], found an \
             array holding an integer"
        );
        assert_eq!(
            first_error(&format!("{up}[[group]]\nuser_agents = [\"a\"]\n[[group]]\nuser_agents = \"GPTBot\"\n")),
            "p.toml:6:15: group.user_agents: expected an array of strings, e.g. user_agents = [\"GPTBot\", \
             \"CCBot\"], found a string"
        );
        assert_eq!(
            first_error(&format!("[server]\nthreads = \"4\"\n{up}")),
            "p.toml:2:11: server.threads: expected an integer, e.g. threads = 2, found a string"
        );
    }
}
