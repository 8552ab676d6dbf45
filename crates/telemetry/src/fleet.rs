//! The fleet view: with a shared store (`[limits] store`), every few
//! seconds this instance adds what its activity model counted since the
//! last flush to the store's per-minute hashes, and reads the fleet's
//! minutes back for the dashboard, which shows fleet totals beside this
//! instance's and how many instances reported in the last minute.
//!
//! Nothing here runs per request: the deltas come from the activity
//! model's per-minute timelines. A finished minute is read from the store
//! once (then kept); the last few are read again on every tick, since
//! other instances flush them a few seconds late.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crawlgate_store::{FleetCount, MinuteCounts, Store};
use serde_json::{json, Value};

use crate::activity::{Activity, Count, Window, MINUTES};

/// Seconds between two flushes (and two reads).
pub const FLUSH_SECS: u64 = 5;
/// Minutes read again on every tick: this one and the two before.
const RECENT: u64 = 3;
/// Finished minutes missing from the cache read per tick, so a fresh
/// instance fills its 24 hours over a few ticks.
const BACKFILL_PER_TICK: usize = 240;

/// A count the store has: (agent, counter name, minute).
type Key = (Arc<str>, &'static str, u64);

/// The deltas to publish: for each non-zero count read from the activity
/// model, how much it grew since `published` (counts never shrink; one
/// that did, as after a timeline slot moved on, adds nothing).
pub fn pending(published: &HashMap<Key, u64>, current: &[(Arc<str>, &'static str, u64, u64)]) -> Vec<(Key, u64, u64)> {
    current
        .iter()
        .filter_map(|(agent, c, minute, n)| {
            let key = (agent.clone(), *c, *minute);
            let before = published.get(&key).copied().unwrap_or(0);
            (*n > before).then(|| (key, *n - before, *n))
        })
        .collect()
}

#[derive(Default)]
struct State {
    /// What was published per (agent, counter, minute), for the minutes
    /// still scanned.
    published: HashMap<Key, u64>,
    /// The minute of the last successful flush (scans start one before).
    flushed: u64,
    /// The fleet's minutes read so far.
    minutes: BTreeMap<u64, MinuteCounts>,
    /// Instances that reported in the last minute, at the last read.
    instances: u64,
    /// The last read succeeded.
    read_ok: bool,
    /// Since when (Unix seconds) the fleet's counts could not be read:
    /// the store went down then, or a read failed; `None` while current.
    unavailable_since: Option<u64>,
}

impl State {
    /// Records a tick at `now` that could not read the fleet; `down_since`
    /// is when the store went down, if it knows.
    fn unavailable(&mut self, now: u64, down_since: Option<u64>) {
        self.read_ok = false;
        if self.unavailable_since.is_none() {
            self.unavailable_since = Some(down_since.unwrap_or(now).min(now));
        }
    }
}

/// This instance's side of the fleet counters.
pub struct Fleet {
    store: Store,
    instance: String,
    state: Mutex<State>,
}

impl Fleet {
    /// Publishes as `instance` (unique in the fleet) into `store`, from
    /// minute `start` on.
    pub fn new(store: Store, instance: String, start_minute: u64) -> Fleet {
        Fleet { store, instance, state: Mutex::new(State { flushed: start_minute, ..State::default() }) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One flush and read at `now` (Unix seconds). Errors leave the deltas
    /// to the next tick; the store counts and logs them.
    pub async fn tick(&self, activity: &Activity, now: u64) {
        // While the store is down the deltas wait (they are kept in the
        // activity model); calls that would fail anyway are not counted
        // as store errors.
        if !self.store.is_up() {
            let since = self.store.health().since;
            self.state().unavailable(now, since);
            return;
        }
        let minute = now / 60;
        let oldest = minute.saturating_sub(MINUTES as u64 - 1);
        let deltas = {
            let state = self.state();
            let first = state.flushed.saturating_sub(1).max(oldest);
            pending(&state.published, &activity.minute_counts(first, minute))
        };
        let counts: Vec<FleetCount<'_>> =
            deltas.iter().map(|((agent, c, m), n, _)| FleetCount { minute: *m, agent, counter: c, n: *n }).collect();
        if self.store.fleet_publish(&self.instance, now, &counts).await.is_ok() {
            let mut state = self.state();
            for (key, _, total) in deltas {
                state.published.insert(key, total);
            }
            state.flushed = minute;
            // The next scan starts one minute before this one.
            state.published.retain(|(_, _, m), _| *m + 1 >= minute);
        }
        let wanted: Vec<u64> = {
            let state = self.state();
            let recent = minute.saturating_sub(RECENT - 1)..=minute;
            let missing = (oldest..minute.saturating_sub(RECENT - 1))
                .rev()
                .filter(|m| !state.minutes.contains_key(m))
                .take(BACKFILL_PER_TICK);
            recent.chain(missing).collect()
        };
        match self.store.fleet_minutes(&wanted, now).await {
            Ok((instances, per_minute)) => {
                let mut state = self.state();
                for (m, counts) in wanted.into_iter().zip(per_minute) {
                    state.minutes.insert(m, counts);
                }
                state.minutes.retain(|m, _| *m >= oldest);
                state.instances = instances;
                state.read_ok = true;
                state.unavailable_since = None;
            }
            Err(_) => self.state().unavailable(now, None),
        }
    }

    /// Flushes and reads every [`FLUSH_SECS`] seconds, until dropped.
    pub async fn run(&self, activity: &Activity) {
        let mut every = tokio::time::interval(Duration::from_secs(FLUSH_SECS));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            self.tick(activity, crate::activity::unix_now()).await;
        }
    }

    /// The `fleet` member of `/api/agents`: per agent, this instance's and
    /// the fleet's counts over `window` ending at `now` (`all`: the last
    /// 24 hours, what the store keeps), most fleet requests first.
    pub fn json(&self, this: &Value, window: Window, now: u64) -> Value {
        let n = match window {
            Window::All => MINUTES,
            Window::Minutes(n) => n,
        } as u64;
        let end = now / 60;
        let state = self.state();
        let store_up = self.store.is_up();
        if !state.read_ok {
            // Frozen totals and an old instance count would read as the
            // fleet's: the page says what is missing instead.
            return json!({
                "shared": true,
                "store_up": store_up,
                "current": false,
                "unavailable_since": state.unavailable_since,
                "window_minutes": n,
                "agents": [],
                "note": unavailable_note(state.unavailable_since, store_up),
            });
        }
        let mut agents: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
        for (_, counts) in state.minutes.range(end.saturating_sub(n - 1)..=end) {
            for ((agent, counter), v) in counts {
                *agents.entry(agent).or_default().entry(counter).or_insert(0) += v;
            }
        }
        let this_rows = this["agents"].as_array().map(Vec::as_slice).unwrap_or_default();
        let referrals = crate::activity::fleet_referrals(&agents);
        let mut rows: Vec<(u64, Value)> = agents
            .iter()
            .filter(|(agent, _)| !agent.starts_with(crate::activity::REFERRER_PREFIX))
            .map(|(agent, counts)| {
                let mine = this_rows.iter().find(|r| r["agent"] == *agent);
                let mut row = serde_json::Map::new();
                row.insert("agent".into(), json!(agent));
                for c in Count::ALL {
                    let k = c.key();
                    row.insert(
                        k.into(),
                        json!({
                            "this": mine.and_then(|r| r[k].as_u64()).unwrap_or(0),
                            "fleet": counts.get(k).copied().unwrap_or(0),
                        }),
                    );
                }
                (counts.get(Count::Requests.key()).copied().unwrap_or(0), Value::Object(row))
            })
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
        json!({
            "shared": true,
            "store_up": store_up,
            "current": true,
            "instances": state.instances,
            "window_minutes": n,
            "agents": rows.into_iter().map(|(_, r)| r).collect::<Vec<_>>(),
            "referrals": referrals,
            "note": "Fleet totals add up every instance's counts in the shared store, per minute (kept 25 hours; \
                     \"since start\" shows the last 24 hours). This instance's counts are its own since it started.",
        })
    }
}

/// What the fleet panel says while the fleet's counts cannot be read.
fn unavailable_note(since: Option<u64>, store_up: bool) -> String {
    let Some(t) = since else {
        return "Fleet totals not read from the shared store yet; showing this instance only.".to_string();
    };
    let why = if store_up { "store read failed" } else { "store down" };
    format!(
        "Fleet totals unavailable since {:02}:{:02} UTC ({why}); showing this instance only.",
        t % 86_400 / 3600,
        t % 3600 / 60
    )
}

/// Adds the `fleet` member to an `/api/agents` document over `window`.
pub fn add_to(fleet: Option<&Fleet>, agents: &mut Value, window: Window) {
    let now = agents["now"].as_u64().unwrap_or_else(crate::activity::unix_now);
    let member = match fleet {
        Some(f) => f.json(agents, window, now),
        None => single_instance_json(),
    };
    if let Value::Object(m) = agents {
        m.insert("fleet".into(), member);
    }
}

/// The `fleet` member without a shared store.
pub fn single_instance_json() -> Value {
    json!({
        "shared": false,
        "instances": 1,
        "note": "This page shows one instance: no shared store ([limits] store) is configured.",
    })
}

/// A name for this instance in the fleet: host name and process id.
pub fn instance_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}:{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_publishes_growth_only() {
        let gpt: Arc<str> = "GPTBot".into();
        let mut published = HashMap::new();
        published.insert((gpt.clone(), "requests", 10), 5);
        published.insert((gpt.clone(), "blocked", 10), 3);
        let current = vec![
            (gpt.clone(), "requests", 10, 8),
            (gpt.clone(), "blocked", 10, 3),
            (gpt.clone(), "requests", 11, 2),
            (gpt.clone(), "allowed", 10, 1),
        ];
        let deltas = pending(&published, &current);
        let got: Vec<(&str, &str, u64, u64, u64)> =
            deltas.iter().map(|((a, c, m), d, t)| (&**a, *c, *m, *d, *t)).collect();
        assert_eq!(
            got,
            [("GPTBot", "requests", 10, 3, 8), ("GPTBot", "requests", 11, 2, 2), ("GPTBot", "allowed", 10, 1, 1)]
        );
    }

    fn hit<'a>(p: &'a crawlgate_policy::Policy, ua: &'a str, path: &'a str, now: u64) -> crate::activity::Hit<'a> {
        let d = p.decide(ua, path);
        crate::activity::Hit {
            generation: 1,
            agent: d.agent_id.zip(d.agent),
            browser: false,
            outcome: d.action(),
            file: crawlgate_policy::LocalFile::at(path),
            bytes: 10,
            path,
            rule: None,
            referer: None,
            client: None,
            verification: d.verification,
            reason: d.block_reason(),
            violation: d.violation(),
            observed: None,
            claimed: None,
            paid: false,
            markdown: None,
            now,
        }
    }

    /// Two instances' activity models flushed into one real redis-server:
    /// each page shows its own counts beside the fleet's sum, and two
    /// instances reporting; a second tick publishes only what is new.
    #[tokio::test]
    async fn two_instances_add_up_in_a_real_redis() {
        let redis = crawlgate_testkit::redis::RedisServer::start();
        let policy = crawlgate_policy::load(
            "[upstream]\nservers = [\"127.0.0.1:1\"]\n\n[[group]]\nuser_agents = [\"ClaudeBot\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n",
            "t.toml",
        )
        .unwrap()
        .policy;
        let now = crate::activity::unix_now();
        let mut instances = Vec::new();
        for (name, n) in [("a", 3), ("b", 4)] {
            let store = Store::new(crawlgate_store::StoreConfig::new(redis.url())).unwrap();
            store.connect().await.unwrap();
            let activity = Activity::new(&policy, 1);
            for _ in 0..n {
                activity.hit(&hit(&policy, "ClaudeBot/1.0", "/x", now));
            }
            instances.push((Fleet::new(store, name.to_string(), now / 60), activity));
        }
        for (fleet, activity) in &instances {
            fleet.tick(activity, now).await;
        }
        // b reads after a published: a's read saw only itself.
        let (b, b_activity) = &instances[1];
        b_activity.hit(&hit(&policy, "ClaudeBot/1.0", "/y", now));
        b.tick(b_activity, now).await;
        let mut page = b_activity.agents_json_at(Window::Minutes(60), now);
        add_to(Some(b), &mut page, Window::Minutes(60));
        let fleet = &page["fleet"];
        assert_eq!(fleet["shared"], true);
        assert_eq!(fleet["store_up"], true);
        assert_eq!(fleet["instances"], 2);
        let row = &fleet["agents"][0];
        assert_eq!(row["agent"], "ClaudeBot");
        assert_eq!(row["requests"], json!({"this": 5, "fleet": 8}));
        assert_eq!(row["blocked"], json!({"this": 5, "fleet": 8}));
        assert_eq!(row["allowed"], json!({"this": 0, "fleet": 0}));
        let key = format!("crawlgate:fleet:{}", now / 60);
        assert_eq!(redis.command(&["HGET", &key, "ClaudeBot:requests"]).as_int(), Some(8));
    }

    /// The store stopped mid-run: the fleet member drops its frozen totals
    /// and instance count and says since when it cannot read them.
    #[tokio::test]
    async fn with_the_store_down_the_fleet_says_since_when_and_shows_no_totals() {
        let mut redis = crawlgate_testkit::redis::RedisServer::start();
        let policy = crawlgate_policy::load(
            "[upstream]\nservers = [\"127.0.0.1:1\"]\n\n[[group]]\nuser_agents = [\"ClaudeBot\"]\nallow = [\"/\"]\n",
            "t.toml",
        )
        .unwrap()
        .policy;
        let now = crate::activity::unix_now();
        let store = Store::new(crawlgate_store::StoreConfig::new(redis.url())).unwrap();
        store.connect().await.unwrap();
        let activity = Activity::new(&policy, 1);
        activity.hit(&hit(&policy, "ClaudeBot/1.0", "/x", now));
        let fleet = Fleet::new(store.clone(), "a".into(), now / 60);
        fleet.tick(&activity, now).await;
        assert_eq!(fleet.json(&json!({}), Window::Minutes(60), now)["instances"], 1);
        redis.stop();
        // The next call finds the connection broken and marks the store down.
        let _ = store.seen_once("k", std::time::Duration::from_secs(1)).await;
        assert!(!store.is_up());
        let since = store.health().since.unwrap();
        fleet.tick(&activity, now + 5).await;
        let v = fleet.json(&json!({}), Window::Minutes(60), now + 5);
        let hhmm = format!("{:02}:{:02}", since % 86_400 / 3600, since % 3600 / 60);
        assert_eq!(
            v,
            json!({"shared": true, "store_up": false, "current": false, "unavailable_since": since,
                   "window_minutes": 60, "agents": [],
                   "note": format!("Fleet totals unavailable since {hhmm} UTC (store down); showing this instance only.")})
        );
    }

    #[test]
    fn unavailable_notes() {
        assert_eq!(
            unavailable_note(Some(86_400 * 3 + 13 * 3600 + 7 * 60 + 59), true),
            "Fleet totals unavailable since 13:07 UTC (store read failed); showing this instance only."
        );
        assert_eq!(
            unavailable_note(None, false),
            "Fleet totals not read from the shared store yet; showing this instance only."
        );
    }

    #[test]
    fn without_a_store_the_page_says_one_instance() {
        assert_eq!(
            single_instance_json(),
            json!({"shared": false, "instances": 1,
                   "note": "This page shows one instance: no shared store ([limits] store) is configured."})
        );
    }
}
