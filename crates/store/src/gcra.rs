//! The GCRA step (generic cell rate algorithm, ITU-T I.371 "virtual
//! scheduling") as a Redis Lua script, so the read, the decision and the
//! write are one atomic step however many instances share the key.
//!
//! With `T = interval / count` and `tau = T * (burst - 1)` (nanoseconds),
//! `tat` the stored theoretical arrival time or `now` when absent: if
//! `now < tat - tau` the request is denied with
//! `retry_after = tat - tau - now`; otherwise it is allowed and
//! `max(tat, now) + T` is stored. The in-process store implements the same
//! definition.
//!
//! The clock is the server's `TIME`, so instances with skewed clocks agree.
//! Redis Lua numbers are doubles, which hold the Unix time exactly in
//! microseconds (the resolution of `TIME`) but not in nanoseconds, so the
//! script keeps times in microseconds (a double near today's Unix time in
//! microseconds has a spacing of 0.25 µs, so an emission interval under
//! about 1 µs would be lost: the policy refuses rates over 1000000/s) and
//! answers `retry_after` in nanoseconds. The key expires one second after
//! its `tat` has passed, when an absent key means the same as the stored
//! one: Redis holds only the keys of active clients.

use std::time::Duration;

use crate::{Store, StoreError};

/// The script: `KEYS[1]` the bucket, `ARGV[1]` T and `ARGV[2]` tau in
/// nanoseconds, optional `ARGV[3]` the time in microseconds instead of
/// `TIME` (for tests). Returns `{allowed (0 or 1), retry_after_ns}`.
pub const GCRA_SCRIPT: &str = r#"
local t = tonumber(ARGV[1]) / 1000
local tau = tonumber(ARGV[2]) / 1000
local now
if ARGV[3] then
  now = tonumber(ARGV[3])
else
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if now < tat - tau then
  return {0, math.ceil((tat - tau - now) * 1000)}
end
local new_tat = math.max(tat, now) + t
redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1000)
return {1, 0}
"#;

/// One limit: the emission interval `T` and the burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gcra {
    /// `T = interval / count`.
    pub emission: Duration,
    /// Requests admitted back to back (at least 1).
    pub burst: u32,
}

impl Gcra {
    /// `count` requests per `interval`, `burst` back to back; `None` when
    /// `count` is 0.
    pub fn per(count: u32, interval: Duration, burst: u32) -> Option<Gcra> {
        if count == 0 {
            return None;
        }
        let ns = interval.as_nanos() / u128::from(count);
        Some(Gcra { emission: Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)), burst })
    }

    /// `T` in nanoseconds.
    pub fn t_ns(&self) -> u64 {
        u64::try_from(self.emission.as_nanos()).unwrap_or(u64::MAX)
    }

    /// `tau = T * (burst - 1)` in nanoseconds.
    pub fn tau_ns(&self) -> u64 {
        self.t_ns().saturating_mul(u64::from(self.burst.max(1) - 1))
    }
}

/// The store's answer for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcraAnswer {
    /// Admitted.
    pub allowed: bool,
    /// When denied, how long until a request would be admitted.
    pub retry_after: Duration,
}

impl Store {
    /// One GCRA step on `key`, the full Redis key (the limiter puts
    /// `[limits] key_prefix` first, [`Store::prefix`]), timed by the
    /// server's clock, within the call budget.
    pub async fn gcra(&self, key: &str, limit: Gcra) -> Result<GcraAnswer, StoreError> {
        self.gcra_inner(key, limit, None).await
    }

    /// [`Store::gcra`] with the time given (microseconds since the Unix
    /// epoch) instead of the server's: for tests that compare the script
    /// with a reference over a fixed sequence.
    pub async fn gcra_at(&self, key: &str, limit: Gcra, now_us: u64) -> Result<GcraAnswer, StoreError> {
        self.gcra_inner(key, limit, Some(now_us)).await
    }

    async fn gcra_inner(&self, key: &str, limit: Gcra, now_us: Option<u64>) -> Result<GcraAnswer, StoreError> {
        let full = key.to_string();
        let script = &self.inner.gcra;
        let (allowed, retry_ns): (i64, i64) = self
            .call(self.inner.timeout, |mut conn| async move {
                let mut invocation = script.key(full);
                invocation.arg(limit.t_ns()).arg(limit.tau_ns());
                if let Some(now) = now_us {
                    invocation.arg(now);
                }
                invocation.invoke_async(&mut conn).await
            })
            .await?;
        Ok(GcraAnswer {
            allowed: allowed == 1,
            retry_after: Duration::from_nanos(u64::try_from(retry_ns).unwrap_or(0)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emission_interval_and_tolerance() {
        let g = Gcra::per(2, Duration::from_secs(1), 3).unwrap();
        assert_eq!((g.t_ns(), g.tau_ns()), (500_000_000, 1_000_000_000));
        let g = Gcra::per(30, Duration::from_secs(60), 1).unwrap();
        assert_eq!((g.t_ns(), g.tau_ns()), (2_000_000_000, 0));
        assert_eq!(Gcra::per(0, Duration::from_secs(1), 1), None);
        // burst 0 is treated as 1 (no tolerance), never as a negative one.
        assert_eq!(Gcra { emission: Duration::from_secs(1), burst: 0 }.tau_ns(), 0);
    }
}
