//! Fleet counters: every instance adds its per-agent counts of each minute
//! to one hash per minute, `<prefix>fleet:<minute>` (minute = Unix seconds
//! / 60), field `<agent>:<counter>`, with `HINCRBY` in one pipeline, so the
//! hash holds the fleet's total and reading it costs the same whatever the
//! number of instances. Each publication also puts the instance in the
//! sorted set `<prefix>fleet:instances`, scored by the time it reported,
//! from which the number of instances that reported in the last minute is
//! read. Everything expires after 25 hours, one more than the longest
//! window the dashboard shows.
//!
//! Minutes and report times come from each instance's own clock: a skew of
//! a few seconds moves a count to a neighbouring minute, which the
//! dashboard's windows (an hour and up) do not show.

use std::collections::BTreeMap;

use crate::{Store, StoreError, BACKGROUND_TIMEOUT};

/// How long a minute's hash and the instance set live: 25 hours.
pub const FLEET_TTL_SECS: u64 = 25 * 3600;
/// An instance counts as reporting when it published within this many seconds.
pub const REPORTING_SECS: u64 = 60;

/// One count to add: `n` more of `counter` for `agent` in `minute`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetCount<'a> {
    /// Unix seconds / 60.
    pub minute: u64,
    /// The agent's name (a policy token, `other-bot`, `browser`).
    pub agent: &'a str,
    /// The counter's name (`requests`, `blocked`, ...); no `:`.
    pub counter: &'a str,
    /// How many more.
    pub n: u64,
}

/// One minute's counts per (agent, counter).
pub type MinuteCounts = BTreeMap<(String, String), u64>;

/// The fleet's counts over some minutes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetView {
    /// Sums per agent and counter.
    pub totals: BTreeMap<(String, String), u64>,
    /// Instances that reported in the last [`REPORTING_SECS`] seconds.
    pub instances: u64,
}

impl FleetView {
    /// The total of one agent's counter (0 when nobody counted it).
    pub fn get(&self, agent: &str, counter: &str) -> u64 {
        self.totals.get(&(agent.to_string(), counter.to_string())).copied().unwrap_or(0)
    }
}

impl Store {
    fn fleet_key(&self, minute: u64) -> String {
        format!("{}fleet:{minute}", self.inner.prefix)
    }

    fn instances_key(&self) -> String {
        format!("{}fleet:instances", self.inner.prefix)
    }

    /// Adds `counts` to the fleet's hashes and records that `instance`
    /// reported at `now` (Unix seconds), in one pipeline. Zero counts are
    /// skipped; an instance with nothing to add still reports.
    pub async fn fleet_publish(&self, instance: &str, now: u64, counts: &[FleetCount<'_>]) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        let mut minutes: Vec<u64> = Vec::new();
        for c in counts.iter().filter(|c| c.n > 0) {
            pipe.cmd("HINCRBY")
                .arg(self.fleet_key(c.minute))
                .arg(format!("{}:{}", c.agent, c.counter))
                .arg(c.n)
                .ignore();
            if !minutes.contains(&c.minute) {
                minutes.push(c.minute);
            }
        }
        for m in minutes {
            pipe.cmd("EXPIRE").arg(self.fleet_key(m)).arg(FLEET_TTL_SECS).ignore();
        }
        let instances = self.instances_key();
        pipe.cmd("ZADD").arg(&instances).arg(now).arg(instance).ignore();
        pipe.cmd("ZREMRANGEBYSCORE").arg(&instances).arg("-inf").arg(now.saturating_sub(FLEET_TTL_SECS)).ignore();
        pipe.cmd("EXPIRE").arg(&instances).arg(FLEET_TTL_SECS).ignore();
        self.call(BACKGROUND_TIMEOUT, |mut conn| async move { pipe.query_async::<()>(&mut conn).await }).await
    }

    /// The fleet's totals over `minutes` and the number of instances that
    /// reported within a minute of `now` (Unix seconds), in one pipeline.
    pub async fn fleet_read(&self, minutes: std::ops::RangeInclusive<u64>, now: u64) -> Result<FleetView, StoreError> {
        let minutes: Vec<u64> = minutes.collect();
        let (instances, per_minute) = self.fleet_minutes(&minutes, now).await?;
        let mut view = FleetView { totals: BTreeMap::new(), instances };
        for counts in per_minute {
            for (k, n) in counts {
                *view.totals.entry(k).or_insert(0) += n;
            }
        }
        Ok(view)
    }

    /// Each of `minutes`' counts per agent and counter (in the order
    /// given), and the number of instances that reported within a minute
    /// of `now` (Unix seconds), in one pipeline.
    pub async fn fleet_minutes(&self, minutes: &[u64], now: u64) -> Result<(u64, Vec<MinuteCounts>), StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("ZCOUNT").arg(self.instances_key()).arg(now.saturating_sub(REPORTING_SECS)).arg("+inf");
        for m in minutes {
            pipe.cmd("HGETALL").arg(self.fleet_key(*m));
        }
        let (instances, hashes): (u64, Vec<Vec<(String, u64)>>) = self
            .call(BACKGROUND_TIMEOUT, |mut conn| async move {
                let mut replies: Vec<redis::Value> = pipe.query_async(&mut conn).await?;
                let first = if replies.is_empty() { redis::Value::Nil } else { replies.remove(0) };
                let instances: u64 = redis::from_redis_value(first)?;
                let hashes = replies
                    .into_iter()
                    .map(redis::from_redis_value::<Vec<(String, u64)>>)
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((instances, hashes))
            })
            .await?;
        let per_minute = hashes
            .into_iter()
            .map(|fields| {
                let mut counts = MinuteCounts::new();
                for (field, n) in fields {
                    // Agent names may hold ':' in principle; counter names never do.
                    let Some((agent, counter)) = field.rsplit_once(':') else { continue };
                    *counts.entry((agent.to_string(), counter.to_string())).or_insert(0) += n;
                }
                counts
            })
            .collect();
        Ok((instances, per_minute))
    }
}
