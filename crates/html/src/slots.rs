//! The per-response state: where the parser is in the head, the
//! insertion points (slots) whose content is decided once the head's own
//! metas are known, the output held back meanwhile, and the findings.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use lol_html::OutputSink;

use crate::plan::{Marker, PlanInner};
use crate::rules::{bounded_rule, covers};
use crate::{DroppedFindings, Finding, FindingKind, Mode, KNOWLEDGE_WINDOW, MAX_FINDINGS};

/// Held output beyond which the decision is taken without waiting for the
/// head to end. Twice the window, so that by then every element starting
/// inside the window has been seen even when enforce rewrites grew a few
/// tags (lol_html quotes the attributes of a tag it rewrites).
const HOLD_CAP: usize = 2 * KNOWLEDGE_WINDOW;

/// Where the parser is, as far as the head is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No element yet.
    BeforeHtml,
    /// `<html>` seen, nothing after it yet.
    BeforeHead,
    /// In the head, explicit or implicit.
    InHead,
    /// The body (or the end) has started.
    AfterHead,
}

/// What a marker turns into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fill {
    /// Right after `<html>`, not yet known whether a `<head>` follows.
    Undecided,
    /// A `<head>` followed the `<html>`; the metas go into it instead.
    Nothing,
    /// The metas.
    Metas,
    /// `<head>` and the metas; an implicit head follows, the parser closes it.
    OpenHead,
    /// `<head>`, the metas, `</head>`.
    ClosedHead,
}

/// An insertion point whose content is decided later. lol_html writes the
/// marker (an HTML comment with the rewriter's nonce) into the output; the
/// output from the marker on is held back and the marker is replaced once
/// the page's head metas are known.
pub(crate) struct Slot {
    pub(crate) marker: Arc<Marker>,
    pub(crate) fill: Fill,
    /// Offset of the marker in `State::out`, once seen.
    pub(crate) at: Option<usize>,
}

pub(crate) struct State {
    pub(crate) phase: Phase,
    /// Open `<template>` elements (their content is inert).
    pub(crate) templates: usize,
    /// The injection point is chosen.
    pub(crate) placed: bool,
    pub(crate) slots: Vec<Slot>,
    /// Fills and `seen` are final.
    pub(crate) decided: bool,
    /// Page metas starting before this input offset are known in time.
    pub(crate) window_end: usize,
    /// The page's head metas within the window: `(token, rule_set)`.
    pub(crate) seen: Vec<(String, Vec<String>)>,
    /// The page's head elements within the window that make a plan head
    /// element redundant (`meta:<name>`, `link:<rel>`).
    pub(crate) seen_head: Vec<String>,
    /// The page's head rules that can decide a missing finding: token ->
    /// distinct [`crate::rules::rule_key`]s among [`PlanInner::relevant`] (audit).
    pub(crate) page_keys: BTreeMap<String, Vec<String>>,
    /// The page's head rules that restrict more than the policy, reported
    /// as extras when the head ends: token -> the first [`MAX_FINDINGS`]
    /// in page order (no more can be recorded) and how many followed.
    pub(crate) extras: BTreeMap<String, (Vec<String>, u64)>,
    /// Recorded findings not yet taken.
    pub(crate) findings: Vec<Finding>,
    /// Findings recorded so far, taken or not (at most [`MAX_FINDINGS`]).
    pub(crate) recorded: usize,
    /// Findings counted past [`MAX_FINDINGS`], over the whole response.
    pub(crate) dropped: DroppedFindings,
    /// The part of `dropped` not yet taken.
    pub(crate) dropped_untaken: DroppedFindings,
    /// The metas replacing the markers, once decided.
    pub(crate) metas_html: String,
    /// Output not yet handed out; from the first slot's marker on it is held.
    pub(crate) out: Vec<u8>,
    /// Where to resume searching `out` for markers.
    pub(crate) scan_from: usize,
    /// Bytes inserted into the output so far (metas, `<head>`, `</head>`).
    pub(crate) grown: usize,
}

impl State {
    pub(crate) fn new() -> State {
        State {
            phase: Phase::BeforeHtml,
            templates: 0,
            placed: false,
            slots: Vec::new(),
            decided: false,
            window_end: usize::MAX,
            seen: Vec::new(),
            seen_head: Vec::new(),
            page_keys: BTreeMap::new(),
            extras: BTreeMap::new(),
            findings: Vec::new(),
            recorded: 0,
            dropped: DroppedFindings::default(),
            dropped_untaken: DroppedFindings::default(),
            metas_html: String::new(),
            out: Vec::new(),
            scan_from: 0,
            grown: 0,
        }
    }

    /// Records a finding, or only counts it past [`MAX_FINDINGS`].
    pub(crate) fn record(&mut self, kind: FindingKind, token: &str, rule: &str) {
        if self.recorded < MAX_FINDINGS {
            self.recorded += 1;
            self.findings.push(Finding { kind, token: token.to_owned(), rule: bounded_rule(rule).to_owned() });
        } else {
            self.drop_findings(kind, 1);
        }
    }

    pub(crate) fn drop_findings(&mut self, kind: FindingKind, n: u64) {
        self.dropped.add(kind, n);
        self.dropped_untaken.add(kind, n);
    }

    pub(crate) fn add_slot(&mut self, plan: &PlanInner, fill: Fill) -> String {
        let i = self.slots.len();
        let marker = plan.markers.get(i).cloned().unwrap_or_else(|| Arc::new(Marker::new(plan.nonce, i)));
        let text = marker.text.clone();
        self.slots.push(Slot { marker, fill, at: None });
        text
    }

    /// Sets the fill of the `<html>` slot while that can still depend on
    /// what follows it.
    pub(crate) fn decide_html_slot(&mut self, fill: Fill, start: usize) {
        if self.decided || start >= self.window_end {
            return;
        }
        if let Some(slot) = self.slots.first_mut() {
            if slot.fill == Fill::Undecided {
                slot.fill = fill;
            }
        }
    }

    /// Fixes what the markers become.
    pub(crate) fn decide(&mut self, plan: &PlanInner) {
        if self.decided {
            return;
        }
        self.decided = true;
        for slot in &mut self.slots {
            if slot.fill == Fill::Undecided {
                slot.fill = Fill::ClosedHead;
            }
        }
        let seen = &self.seen;
        let seen_head = &self.seen_head;
        self.metas_html = plan
            .metas
            .iter()
            .filter(|(token, set, _)| !seen.iter().any(|(t, s)| t == token && s == set))
            .map(|(_, _, html)| html.as_str())
            .chain(
                plan.head
                    .iter()
                    .filter(|(unless, _)| !unless.iter().any(|u| seen_head.contains(u)))
                    .map(|(_, html)| html.as_str()),
            )
            .collect();
    }

    /// The head ended: report what the head lacked or added, decide the
    /// markers.
    pub(crate) fn close_head(&mut self, plan: &PlanInner) {
        if self.phase == Phase::AfterHead {
            return;
        }
        self.phase = Phase::AfterHead;
        self.decide(plan);
        if plan.mode == Mode::Inject {
            return;
        }
        // Missing: only audit; enforce has injected the policy's metas.
        if plan.mode == Mode::Audit {
            for (token, rules) in &plan.rules {
                let mut page: Vec<String> = self.page_keys.get("*").cloned().unwrap_or_default();
                if token != "*" {
                    page.extend(self.page_keys.get(token).into_iter().flatten().cloned());
                }
                for r in rules {
                    if !covers(&page, r) {
                        self.record(FindingKind::Missing, token, r);
                    }
                }
            }
        }
        // Extra: restrictions the policy does not ask for.
        for (token, (rules, more)) in std::mem::take(&mut self.extras) {
            for r in &rules {
                self.record(FindingKind::Extra, &token, r);
            }
            self.drop_findings(FindingKind::Extra, more);
        }
    }

    /// Whether output is waiting to be handed out.
    pub(crate) fn holds_output(&self) -> bool {
        !self.out.is_empty() || !self.slots.is_empty()
    }

    /// Hands out the output that is ready, followed by `tail` (input the
    /// caller passes through as it is): everything, or, while a marker
    /// is undecided, what precedes the first marker. `force` decides and
    /// releases everything (end of input, bail-out).
    pub(crate) fn take_output(&mut self, plan: &PlanInner, force: bool, tail: &[u8]) -> Vec<u8> {
        let mut out = self.ready_output(plan, force, tail.len());
        out.extend_from_slice(tail);
        out
    }

    /// [`State::take_output`] without the tail; `room` is how many bytes
    /// the caller appends.
    fn ready_output(&mut self, plan: &PlanInner, force: bool, room: usize) -> Vec<u8> {
        if self.slots.is_empty() {
            return std::mem::take(&mut self.out);
        }
        let from = self.scan_from.min(self.out.len());
        for slot in self.slots.iter_mut().filter(|s| s.at.is_none()) {
            slot.at = slot.marker.finder.find(&self.out[from..]).map(|p| from + p);
        }
        self.scan_from = self.out.len().saturating_sub(self.slots[0].marker.text.len() + 8);
        if !self.decided {
            // Measured from the last marker: the window starts there.
            let last = &self.slots[self.slots.len() - 1];
            let held_past_marker = last.at.map(|at| self.out.len().saturating_sub(at + last.marker.text.len()));
            if force || held_past_marker.is_some_and(|n| n > HOLD_CAP) {
                self.decide(plan);
            }
        }
        if self.decided && (force || self.slots.iter().all(|s| s.at.is_some())) {
            let mut slots = std::mem::take(&mut self.slots);
            slots.sort_by_key(|s| s.at);
            let out = std::mem::take(&mut self.out);
            let mut result = Vec::with_capacity(out.len() + self.metas_html.len() + 16 + room);
            let mut pos = 0;
            for slot in slots {
                let Some(at) = slot.at else { continue };
                result.extend_from_slice(&out[pos..at]);
                let before = result.len();
                if !self.metas_html.is_empty() {
                    match slot.fill {
                        Fill::Nothing | Fill::Undecided => {}
                        Fill::Metas => result.extend_from_slice(self.metas_html.as_bytes()),
                        Fill::OpenHead => {
                            result.extend_from_slice(b"<head>");
                            result.extend_from_slice(self.metas_html.as_bytes());
                        }
                        Fill::ClosedHead => {
                            result.extend_from_slice(b"<head>");
                            result.extend_from_slice(self.metas_html.as_bytes());
                            result.extend_from_slice(b"</head>");
                        }
                    }
                }
                self.grown += result.len() - before;
                pos = at + slot.marker.text.len();
            }
            result.extend_from_slice(&out[pos..]);
            self.scan_from = 0;
            return result;
        }
        // Still holding: release what precedes the first marker.
        match self.slots[0].at {
            Some(first) if first > 0 => {
                let held = self.out.split_off(first);
                for slot in &mut self.slots {
                    slot.at = slot.at.map(|a| a - first);
                }
                self.scan_from = self.scan_from.saturating_sub(first);
                std::mem::replace(&mut self.out, held)
            }
            _ => Vec::new(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct Sink(pub(crate) Arc<Mutex<State>>);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl OutputSink for Sink {
    fn handle_chunk(&mut self, chunk: &[u8]) {
        lock(&self.0).out.extend_from_slice(chunk);
    }
}
