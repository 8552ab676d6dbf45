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
//!
//! One call runs `n` steps of one key in order at one instant, each with
//! its own answer (a denied step leaves `tat` as it was), exactly as `n`
//! calls at that instant would: [`Store::gcra`] coalesces the checks of a
//! key that arrive while a call on it is in flight into the next call, so a
//! busy key costs one round trip per batch, not per request, and the fleet
//! still admits exactly the configured rate.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use redis::{ErrorKind, RedisError};
use tokio::sync::oneshot;

use crate::{Store, StoreError};

/// The script: `KEYS[1]` the bucket, `ARGV[1]` T and `ARGV[2]` tau in
/// nanoseconds, `ARGV[3]` the number of steps `n`, optional `ARGV[4]` the
/// time in microseconds instead of `TIME` (for tests). Returns
/// `{allowed_1 (0 or 1), retry_after_ns_1, ..., allowed_n, retry_after_ns_n}`.
pub const GCRA_SCRIPT: &str = r#"
local t = tonumber(ARGV[1]) / 1000
local tau = tonumber(ARGV[2]) / 1000
local n = tonumber(ARGV[3])
local now
if ARGV[4] then
  now = tonumber(ARGV[4])
else
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local tat = tonumber(redis.call('GET', KEYS[1])) or now
local out = {}
local moved = false
for i = 1, n do
  if now < tat - tau then
    out[2 * i - 1] = 0
    out[2 * i] = math.ceil((tat - tau - now) * 1000)
  else
    tat = math.max(tat, now) + t
    out[2 * i - 1] = 1
    out[2 * i] = 0
    moved = true
  end
end
if moved then
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
end
return out
"#;

/// The most steps one script call runs; later arrivals wait for the next
/// call, so one call's work on the server stays bounded.
pub const MAX_BATCH: usize = 256;

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

/// The keys with a script call in flight, each with the checks that
/// arrived since and go together in its next call.
pub(crate) type Batches = std::sync::Mutex<HashMap<Box<str>, Batch>>;

/// The checks of one key waiting for the call in flight on it.
pub(crate) struct Batch {
    /// Only checks of this limit join (a reload may change a key's limit;
    /// a check of another one makes its own call).
    limit: Gcra,
    waiters: Vec<Waiter>,
}

/// One check waiting to go in the next call on its key.
struct Waiter {
    /// Its arrival plus the budget: past it the check has fallen back to
    /// the in-process store and is left out of the next call.
    deadline: Instant,
    answer: oneshot::Sender<Result<GcraAnswer, StoreError>>,
}

/// What a check does on arrival.
enum Role {
    /// No call in flight on the key: make one.
    Lead,
    /// Wait for the next call on the key.
    Wait(oneshot::Receiver<Result<GcraAnswer, StoreError>>),
    /// A call of another limit is in flight: make an uncoalesced call.
    Alone,
}

impl Store {
    /// One GCRA step on `key`, the full Redis key (the limiter puts
    /// `[limits] key_prefix` first, [`Store::prefix`]), timed by the
    /// server's clock, answered within the call budget counted from now.
    ///
    /// While a call on `key` is in flight, the check waits and goes with
    /// the others that arrived meanwhile in one call, in arrival order
    /// (see the module's header); a check still waiting when its budget
    /// runs out fails with [`StoreError::Timeout`] and is left out of the
    /// call.
    pub async fn gcra(&self, key: &str, limit: Gcra) -> Result<GcraAnswer, StoreError> {
        let deadline = Instant::now() + self.inner.timeout;
        let role = {
            let mut batches = lock(&self.inner.batches);
            match batches.get_mut(key) {
                None => {
                    batches.insert(key.into(), Batch { limit, waiters: Vec::new() });
                    Role::Lead
                }
                Some(batch) if batch.limit == limit => {
                    let (answer, rx) = oneshot::channel();
                    batch.waiters.push(Waiter { deadline, answer });
                    Role::Wait(rx)
                }
                Some(_) => Role::Alone,
            }
        };
        match role {
            Role::Lead => {
                // Dropped (a caller's timeout, a closed connection) or
                // done, the next batch goes on without this check.
                let _lead = Leading { store: self, key };
                self.steps(key, limit, 1, None).await.map(|answers| answers[0])
            }
            Role::Alone => self.steps(key, limit, 1, None).await.map(|answers| answers[0]),
            Role::Wait(rx) => {
                let mut waiting = Waiting { store: self, deadline, done: false };
                let answer = match crate::within(deadline.into(), rx).await {
                    Some(Ok(answer)) => answer,
                    // The batch was abandoned: its runtime is shutting down.
                    Some(Err(_)) => Err(self.down()),
                    None => {
                        self.inner.errors.fetch_add(1, Ordering::Relaxed);
                        Err(self.timeout_error())
                    }
                };
                waiting.done = true;
                answer
            }
        }
    }

    /// [`Store::gcra`] with the time given (microseconds since the Unix
    /// epoch) instead of the server's, never coalesced: for tests that
    /// compare the script with a reference over a fixed sequence.
    pub async fn gcra_at(&self, key: &str, limit: Gcra, now_us: u64) -> Result<GcraAnswer, StoreError> {
        self.steps(key, limit, 1, Some(now_us)).await.map(|answers| answers[0])
    }

    /// `n` steps on `key` in one call at `now_us` (microseconds since the
    /// Unix epoch), in order: what [`Store::gcra`] runs for a batch of
    /// `n` checks, for tests.
    pub async fn gcra_batch_at(
        &self,
        key: &str,
        limit: Gcra,
        n: usize,
        now_us: u64,
    ) -> Result<Vec<GcraAnswer>, StoreError> {
        self.steps(key, limit, n, Some(now_us)).await
    }

    /// One script call of `n` steps (1 to [`MAX_BATCH`]), within the
    /// budget; `n` answers or one error, counted as one failed check.
    async fn steps(
        &self,
        key: &str,
        limit: Gcra,
        n: usize,
        now_us: Option<u64>,
    ) -> Result<Vec<GcraAnswer>, StoreError> {
        let result = self.steps_uncounted(key, limit, n, now_us).await;
        if result.is_err() {
            self.inner.errors.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// [`Store::steps`] without counting a failure.
    async fn steps_uncounted(
        &self,
        key: &str,
        limit: Gcra,
        n: usize,
        now_us: Option<u64>,
    ) -> Result<Vec<GcraAnswer>, StoreError> {
        let script = &self.inner.gcra;
        let flat: Vec<i64> = self
            .attempt(self.inner.timeout, |mut conn| async move {
                // EVALSHA built as one command (what `Script::invoke_async`
                // builds through an invocation with an allocation per
                // argument); NOSCRIPT loads the script and tries once more.
                let mut evalsha = redis::Cmd::with_capacity(8, 64 + key.len());
                evalsha.arg("EVALSHA").arg(script.get_hash()).arg(1).arg(key);
                evalsha.arg(limit.t_ns()).arg(limit.tau_ns()).arg(n);
                if let Some(now) = now_us {
                    evalsha.arg(now);
                }
                let flat: Vec<i64> = match evalsha.query_async(&mut conn).await {
                    Err(e) if e.code() == Some("NOSCRIPT") => {
                        script.prepare_invoke().load_async(&mut conn).await?;
                        evalsha.query_async(&mut conn).await?
                    }
                    other => other?,
                };
                if flat.len() != 2 * n {
                    return Err(RedisError::from((
                        ErrorKind::UnexpectedReturnType,
                        "the GCRA script returned the wrong number of answers",
                    )));
                }
                Ok(flat)
            })
            .await?;
        Ok(flat
            .chunks_exact(2)
            .map(|pair| GcraAnswer {
                allowed: pair[0] == 1,
                retry_after: Duration::from_nanos(u64::try_from(pair[1]).unwrap_or(0)),
            })
            .collect())
    }

    /// After a call on `key`: its waiters, if any, go in the next call,
    /// made by a task on this runtime; else the key has no call in flight.
    fn hand_off(&self, key: &str) {
        let Some((limit, waiters)) = self.next_batch(key) else { return };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // The guard exists before the task: a task dropped before
                // its first poll (its runtime shutting down) frees the key.
                let guard = Draining { store: self.clone(), key: key.into(), done: false };
                runtime.spawn(async move { guard.drain(limit, waiters).await });
            }
            Err(_) => {
                // No runtime to call from: the waiters fail (their
                // receivers close) and the key is free.
                lock(&self.inner.batches).remove(key);
            }
        }
    }

    /// Takes the next batch of `key` (at most [`MAX_BATCH`] checks), or
    /// marks the key free when none is waiting.
    fn next_batch(&self, key: &str) -> Option<(Gcra, Vec<Waiter>)> {
        let mut batches = lock(&self.inner.batches);
        let batch = batches.get_mut(key)?;
        batch.waiters.retain(|w| !w.answer.is_closed());
        if batch.waiters.is_empty() {
            batches.remove(key);
            return None;
        }
        let rest = batch.waiters.split_off(batch.waiters.len().min(MAX_BATCH));
        Some((batch.limit, std::mem::replace(&mut batch.waiters, rest)))
    }

    /// Runs the batches of `key` one call after the other until no check
    /// is waiting.
    async fn drain(&self, key: &str, limit: Gcra, mut waiters: Vec<Waiter>) {
        loop {
            // A check past its budget is falling back (its own timer may
            // not have fired yet): it is told so and left out of the call.
            let now = Instant::now();
            let (live, late): (Vec<Waiter>, Vec<Waiter>) = waiters.drain(..).partition(|w| w.deadline > now);
            waiters = live;
            for waiter in late {
                self.answer(waiter, Err(self.timeout_error()));
            }
            if !waiters.is_empty() {
                match self.steps_uncounted(key, limit, waiters.len(), None).await {
                    Ok(answers) => {
                        for (waiter, answer) in waiters.drain(..).zip(answers) {
                            self.answer(waiter, Ok(answer));
                        }
                    }
                    Err(e) => {
                        for waiter in waiters.drain(..) {
                            self.answer(waiter, Err(e.clone()));
                        }
                    }
                }
            }
            match self.next_batch(key) {
                Some((_, next)) => waiters = next,
                None => break,
            }
        }
    }

    /// Gives a waiting check its answer. A failure it receives counts as
    /// a failed check; one that gave up meanwhile counted itself.
    fn answer(&self, waiter: Waiter, answer: Result<GcraAnswer, StoreError>) {
        let failed = answer.is_err();
        if waiter.answer.send(answer).is_ok() && failed {
            self.inner.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn timeout_error(&self) -> StoreError {
        StoreError::Timeout { target: self.inner.target.clone(), budget: self.inner.timeout }
    }

    fn down(&self) -> StoreError {
        self.inner.errors.fetch_add(1, Ordering::Relaxed);
        StoreError::Down { target: self.inner.target.clone() }
    }
}

fn lock(batches: &Batches) -> std::sync::MutexGuard<'_, HashMap<Box<str>, Batch>> {
    // The map is consistent after any panic (each change is one call).
    batches.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The check that made the call in flight on `key`: done or dropped, it
/// hands the key's waiters on.
struct Leading<'a> {
    store: &'a Store,
    key: &'a str,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        self.store.hand_off(self.key);
    }
}

/// The task making the calls of a key's batches: dropped unfinished (its
/// runtime shut down, before or after its first poll), it frees the key;
/// the waiters' receivers close.
struct Draining {
    store: Store,
    key: Box<str>,
    done: bool,
}

impl Draining {
    async fn drain(mut self, limit: Gcra, waiters: Vec<Waiter>) {
        self.store.drain(&self.key, limit, waiters).await;
        self.done = true;
    }
}

impl Drop for Draining {
    fn drop(&mut self) {
        if !self.done {
            lock(&self.store.inner.batches).remove(&*self.key);
        }
    }
}

/// A check waiting for its batch: dropped unanswered once its budget has
/// passed (a caller's timeout of the same length), it counts as failed.
/// A waiter's timeout is not the call's: it does not count towards
/// marking the store down.
struct Waiting<'a> {
    store: &'a Store,
    deadline: Instant,
    done: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.done && Instant::now() >= self.deadline {
            self.store.inner.errors.fetch_add(1, Ordering::Relaxed);
        }
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
