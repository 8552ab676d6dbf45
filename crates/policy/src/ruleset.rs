//! Rule sets: the deciding rule for a path among a group's Allow and
//! Disallow patterns (RFC 9309 section 2.2.2: the longest match wins, allow
//! wins ties), found through a radix trie over the patterns' literal
//! prefixes so a lookup reads only the rules that can match.

use crate::pattern::{ByteSet, Pattern};

/// A radix trie node over the rules' literal prefixes.
#[derive(Debug, Default, Clone)]
struct Node {
    /// `(first byte of the edge, child)`, sorted by byte.
    children: Vec<(u8, u32)>,
    /// The rest of the edge into this node: the bytes after its first one
    /// (a chain of nodes without rules or branches, collapsed so a lookup
    /// compares them at once instead of stepping byte by byte).
    label: Box<[u8]>,
    /// Rules whose literal prefix ends here, best first.
    rules: Vec<Candidate>,
}

/// A rule as the trie holds it: enough to pass over it without reading
/// its pattern.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    rule: u32,
    /// Its precedence rank (lower is better).
    rank: u32,
    /// Bytes a path needs for the pattern to match; empty for a pattern
    /// without `*`, whose literal the trie has compared already.
    needs: ByteSet,
}

/// `s.starts_with(prefix)` as an inlined loop: labels are a few bytes, for
/// which a call to `memcmp` costs more than the comparison.
#[inline]
fn has_prefix(s: &[u8], prefix: &[u8]) -> bool {
    prefix.len() <= s.len() && s.iter().zip(prefix).all(|(a, b)| a == b)
}

/// Collapses the byte trie `trie` (root 0, children sorted) into a radix
/// trie: every chain of nodes with one child and no rules becomes a label.
fn compress(trie: &[Node]) -> Vec<Node> {
    let mut out = vec![Node { rules: trie[0].rules.clone(), ..Node::default() }];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((t, o)) = stack.pop() {
        for &(b, c) in &trie[t].children {
            let mut c = c as usize;
            let mut label = Vec::new();
            while trie[c].rules.is_empty() && trie[c].children.len() == 1 {
                let (next_b, next) = trie[c].children[0];
                label.push(next_b);
                c = next as usize;
            }
            out.push(Node { children: Vec::new(), label: label.into_boxed_slice(), rules: trie[c].rules.clone() });
            let n = out.len() - 1;
            out[o].children.push((b, n as u32));
            stack.push((c, n));
        }
    }
    out
}

/// A compiled set of rules `(pattern, allow)`.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    patterns: Vec<Pattern>,
    allow: Vec<bool>,
    nodes: Vec<Node>,
}

impl RuleSet {
    /// Compiles rules; `evaluate` returns indices into `rules`.
    pub fn new(rules: Vec<(Pattern, bool)>) -> RuleSet {
        let mut order: Vec<usize> = (0..rules.len()).collect();
        order.sort_by(|&a, &b| {
            rules[b].0.specificity().cmp(&rules[a].0.specificity()).then(rules[b].1.cmp(&rules[a].1)).then(a.cmp(&b))
        });
        // Precedence rank per rule: lower is better (longer, then allow).
        let mut rank = vec![0u32; rules.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = u32::try_from(r).unwrap_or(u32::MAX);
        }
        let mut nodes = vec![Node::default()];
        for &i in &order {
            let mut at = 0usize;
            for &b in rules[i].0.literal_prefix().as_bytes() {
                let next = match nodes[at].children.iter().find(|(c, _)| *c == b) {
                    Some(&(_, n)) => n as usize,
                    None => {
                        nodes.push(Node::default());
                        let n = nodes.len() - 1;
                        nodes[at].children.push((b, n as u32));
                        n
                    }
                };
                at = next;
            }
            let needs = rules[i].0.needed_bytes();
            nodes[at].rules.push(Candidate { rule: i as u32, rank: rank[i], needs });
        }
        for n in &mut nodes {
            n.children.sort_unstable();
        }
        let nodes = compress(&nodes);
        let (patterns, allow) = rules.into_iter().unzip();
        RuleSet { patterns, allow, nodes }
    }

    /// The same rules with every pattern [`Pattern::folded`]; rule indices
    /// are unchanged.
    pub fn folded(&self) -> RuleSet {
        RuleSet::new(self.patterns.iter().map(Pattern::folded).zip(self.allow.iter().copied()).collect())
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The pattern of rule `i`.
    pub fn pattern(&self, i: usize) -> &Pattern {
        &self.patterns[i]
    }

    /// Whether rule `i` allows.
    pub fn is_allow(&self, i: usize) -> bool {
        self.allow[i]
    }

    /// The deciding rule for an already canonical path and query: the
    /// longest matching pattern, allow winning ties; `None` when no rule
    /// matches. No allocation.
    pub fn evaluate(&self, path: &str) -> Option<usize> {
        if self.patterns.is_empty() {
            return None;
        }
        // (rule, rank) of the best match so far.
        let mut best: Option<(u32, u32)> = None;
        // Computed on first use: most nodes on the way hold no wildcard rule.
        let mut path_bytes: Option<ByteSet> = None;
        let mut consider = |node: &Node| {
            for c in &node.rules {
                if best.is_some_and(|(_, rank)| rank <= c.rank) {
                    // Rules in a node are best-first: nothing later wins.
                    break;
                }
                if c.needs != ByteSet::default()
                    && !c.needs.is_subset_of(*path_bytes.get_or_insert_with(|| ByteSet::of(path.as_bytes())))
                {
                    continue;
                }
                if self.patterns[c.rule as usize].matches_after_prefix(path.as_bytes()) {
                    best = Some((c.rule, c.rank));
                    break;
                }
            }
        };
        let bytes = path.as_bytes();
        let (mut at, mut pos) = (0usize, 0usize);
        consider(&self.nodes[0]);
        while let Some(&b) = bytes.get(pos) {
            let node = &self.nodes[at];
            let Ok(k) = node.children.binary_search_by_key(&b, |&(c, _)| c) else { break };
            let child = node.children[k].1 as usize;
            // Nodes collapsed into the label held no rules: a path that
            // leaves the label reaches no further rule.
            if !has_prefix(&bytes[pos + 1..], &self.nodes[child].label) {
                break;
            }
            pos += 1 + self.nodes[child].label.len();
            at = child;
            consider(&self.nodes[at]);
        }
        best.map(|(rule, _)| rule as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pattern {
        Pattern::new_lenient(s)
    }

    #[test]
    fn longest_match_and_allow_ties() {
        let rules = RuleSet::new(vec![(p("/p"), true), (p("/"), false)]);
        assert_eq!(rules.evaluate("/page"), Some(0));
        let rules = RuleSet::new(vec![(p("/folder"), true), (p("/folder"), false)]);
        assert_eq!(rules.evaluate("/folder/page"), Some(0));
        let rules = RuleSet::new(vec![(p("/page"), true), (p("/*.htm"), false)]);
        assert_eq!(rules.evaluate("/page.htm"), Some(1));
        let rules = RuleSet::new(vec![(p("/$"), true), (p("/"), false)]);
        assert_eq!(rules.evaluate("/"), Some(0));
        assert_eq!(rules.evaluate("/page.htm"), Some(1));
        assert_eq!(RuleSet::new(vec![(p("/x"), false)]).evaluate("/y"), None);
    }

    #[test]
    fn folded_rules_keep_their_indices() {
        let rules = RuleSet::new(vec![(p("/Public/"), true), (p("/"), false), (p("/PRIVATE/*.ASPX"), false)]).folded();
        assert_eq!(rules.evaluate("/public/a"), Some(0));
        assert_eq!(rules.evaluate("/private/x/y.aspx"), Some(2));
        assert_eq!(rules.evaluate("/Public/a"), Some(1));
        assert!(rules.is_allow(0) && !rules.is_allow(2));
    }

    #[test]
    fn trie_finds_wildcard_rules_too() {
        let mut rules = Vec::new();
        for i in 0..300 {
            rules.push((p(&format!("/section{i}/")), i % 2 == 0));
        }
        rules.push((p("/*.bak$"), false));
        rules.push((p("/section7/*/private"), false));
        let set = RuleSet::new(rules);
        assert_eq!(set.evaluate("/section12/x"), Some(12));
        assert_eq!(set.evaluate("/section7/a/private"), Some(301));
        assert_eq!(set.evaluate("/elsewhere/x.bak"), Some(300));
        assert_eq!(set.evaluate("/elsewhere/x"), None);
    }
}
