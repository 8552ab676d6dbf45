//! The store against a real `redis-server` (testkit): the GCRA script
//! against a reference implementation, NOSCRIPT, the time budget, a server
//! stopped and started again, passwords, the replay primitive and the
//! fleet counters.

// The helpers outside #[test] functions stop a test the same way.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crawlgate_store::{FleetCount, Gcra, GcraAnswer, Store, StoreConfig, StoreError};
use crawlgate_testkit::redis::{RedisServer, Resp};

/// A store with a budget generous enough for a loaded test machine; the
/// budget test uses the default one.
fn store(redis: &RedisServer) -> Store {
    Store::new(StoreConfig { timeout: Duration::from_secs(1), ..StoreConfig::new(redis.url()) }).unwrap()
}

async fn connected(redis: &RedisServer) -> Store {
    let s = store(redis);
    s.connect().await.unwrap();
    assert!(s.is_up());
    s
}

/// Waits (up to 10 s) until the store's state is `up`.
async fn wait_up(store: &Store, up: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.is_up() != up {
        assert!(Instant::now() < deadline, "store never became up={up}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The GCRA definition, in integer nanoseconds.
struct Reference {
    tat: Option<u64>,
}

impl Reference {
    fn step(&mut self, now: u64, t: u64, tau: u64) -> GcraAnswer {
        let tat = self.tat.unwrap_or(now);
        if now + tau < tat {
            return GcraAnswer { allowed: false, retry_after: Duration::from_nanos(tat - tau - now) };
        }
        self.tat = Some(tat.max(now) + t);
        GcraAnswer { allowed: true, retry_after: Duration::ZERO }
    }
}

/// A fixed linear congruential sequence (Knuth's MMIX constants), so a
/// failure replays.
fn lcg(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    }
}

#[tokio::test]
async fn script_matches_the_reference_over_a_sequence() {
    let redis = RedisServer::start();
    let s = connected(&redis).await;
    // Emission intervals in whole microseconds (the script's unit) from
    // 1 ms to 2 s, bursts 1 to 5, arrivals 0 to 1.5 T apart, from a fixed
    // linear congruential sequence so a failure replays.
    let limits = [
        Gcra::per(2, Duration::from_secs(1), 1).unwrap(),
        Gcra::per(10, Duration::from_secs(1), 3).unwrap(),
        Gcra::per(30, Duration::from_secs(60), 5).unwrap(),
        Gcra::per(1000, Duration::from_secs(1), 2).unwrap(),
    ];
    let mut next = lcg(0x2545_f491_4f6c_dd1d);
    let (mut allowed, mut denied) = (0, 0);
    for (i, limit) in limits.iter().enumerate() {
        let key = format!("ref{i}");
        let mut reference = Reference { tat: None };
        let t_us = limit.t_ns() / 1000;
        let mut now_us: u64 = 1_764_000_000_000_000;
        for step in 0..400 {
            now_us += next() % (3 * t_us / 2 + 1);
            let got = s.gcra_at(&key, *limit, now_us).await.unwrap();
            let want = reference.step(now_us * 1000, limit.t_ns(), limit.tau_ns());
            assert_eq!(got, want, "limit {limit:?}, step {step}, now {now_us} µs");
            if got.allowed {
                allowed += 1;
            } else {
                denied += 1;
            }
        }
    }
    // The sequence exercises both answers.
    assert!(allowed > 300 && denied > 300, "allowed {allowed}, denied {denied}");
}

#[tokio::test]
async fn batched_script_matches_the_reference_step_by_step() {
    let redis = RedisServer::start();
    let s = connected(&redis).await;
    // As above, but each arrival instant brings a batch of 1 to 12 steps
    // (now and then one of MAX_BATCH), run in one call: each answer must
    // be the reference's for that step in order, denied steps leaving tat
    // as it was.
    let limits = [
        Gcra::per(2, Duration::from_secs(1), 1).unwrap(),
        Gcra::per(10, Duration::from_secs(1), 3).unwrap(),
        Gcra::per(30, Duration::from_secs(60), 5).unwrap(),
        Gcra::per(1000, Duration::from_secs(1), 20).unwrap(),
    ];
    let mut next = lcg(0x9e37_79b9_7f4a_7c15);
    let (mut steps, mut allowed, mut denied, mut mixed) = (0, 0, 0, 0);
    for (i, limit) in limits.iter().enumerate() {
        let key = format!("batch{i}");
        let mut reference = Reference { tat: None };
        let t_us = limit.t_ns() / 1000;
        let mut now_us: u64 = 1_764_000_000_000_000;
        for call in 0..150 {
            // Batches arrive further apart than single steps, so both
            // answers stay common.
            now_us += next() % (4 * t_us + 1);
            let n = if next().is_multiple_of(50) { crawlgate_store::MAX_BATCH } else { 1 + (next() % 12) as usize };
            let got = s.gcra_batch_at(&key, *limit, n, now_us).await.unwrap();
            let want: Vec<GcraAnswer> =
                (0..n).map(|_| reference.step(now_us * 1000, limit.t_ns(), limit.tau_ns())).collect();
            assert_eq!(got, want, "limit {limit:?}, call {call}, n {n}, now {now_us} µs");
            let a = got.iter().filter(|g| g.allowed).count();
            allowed += a;
            denied += n - a;
            steps += n;
            if a > 0 && a < n {
                mixed += 1;
            }
        }
    }
    assert!(steps > 1600, "{steps} steps");
    assert!(allowed > 500 && denied > 500 && mixed > 100, "allowed {allowed}, denied {denied}, mixed {mixed}");
}

/// EVALSHA calls the server has run (`INFO commandstats`).
fn evalsha_calls(redis: &RedisServer) -> i64 {
    let info = redis.command(&["INFO", "commandstats"]);
    let info = info.as_str().unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[tokio::test]
async fn concurrent_checks_of_one_key_go_in_one_call_and_admit_exactly_the_burst() {
    let redis = RedisServer::start();
    let s = connected(&redis).await;
    let limit = Gcra::per(1, Duration::from_secs(3600), 10).unwrap();
    // Warm the script up (NOSCRIPT is answered once per script).
    assert!(s.gcra("other", limit).await.unwrap().allowed);
    let before = evalsha_calls(&redis);
    // 50 checks arrive while the first one's call is in flight: the first
    // makes a call alone, the 49 others wait and go together in the next.
    let checks: Vec<_> = (0..50)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.gcra("burst", limit).await.unwrap() })
        })
        .collect();
    let mut answers = Vec::new();
    for check in checks {
        answers.push(check.await.unwrap());
    }
    assert_eq!(evalsha_calls(&redis) - before, 2);
    // In arrival order: exactly the burst is admitted, the rest told to
    // come back in about one emission interval.
    let allowed: Vec<bool> = answers.iter().map(|a| a.allowed).collect();
    assert_eq!(allowed, [vec![true; 10], vec![false; 40]].concat());
    for a in &answers[10..] {
        assert!(a.retry_after > Duration::from_secs(3590) && a.retry_after <= Duration::from_secs(3600), "{a:?}");
    }
    assert_eq!(s.errors_total(), 0);
    // The key has no call in flight any more: the next check calls at once.
    assert!(!s.gcra("burst", limit).await.unwrap().allowed);
    assert_eq!(evalsha_calls(&redis) - before, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_concurrent_checks_on_two_threads_admits_exactly_the_burst() {
    let redis = RedisServer::start();
    let s = connected(&redis).await;
    let limit = Gcra::per(1, Duration::from_secs(3600), 25).unwrap();
    let checks: Vec<_> = (0..400)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.gcra("fleet", limit).await.unwrap().allowed })
        })
        .collect();
    let mut admitted = 0;
    for check in checks {
        admitted += usize::from(check.await.unwrap());
    }
    assert_eq!(admitted, 25);
    // Coalesced: far fewer calls than checks.
    assert!(evalsha_calls(&redis) < 200, "{} calls", evalsha_calls(&redis));
}

#[tokio::test]
async fn waiting_checks_time_out_on_their_own_budget_without_marking_the_store_down() {
    let redis = RedisServer::start();
    let s = Store::new(StoreConfig::new(redis.url())).unwrap();
    s.connect().await.unwrap();
    let limit = Gcra::per(1, Duration::from_secs(1), 1).unwrap();
    assert!(s.gcra("warm", limit).await.unwrap().allowed);
    redis.pause();
    let checks: Vec<_> = (0..10)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.gcra("k", limit).await.unwrap_err() })
        })
        .collect();
    for check in checks {
        let err = check.await.unwrap();
        assert!(matches!(err, StoreError::Timeout { budget, .. } if budget == Duration::from_millis(5)), "{err}");
    }
    // Ten checks failed; the calls that timed out (the first check's,
    // perhaps a batch's) are fewer than three: the store is up.
    assert_eq!(s.errors_total(), 10);
    assert!(s.is_up());
    redis.resume();
    assert!(s.gcra("k2", limit).await.unwrap().allowed);
}

#[tokio::test]
async fn server_time_burst_then_retry_after_and_a_bounded_ttl() {
    let redis = RedisServer::start();
    let s = connected(&redis).await;
    let limit = Gcra::per(1, Duration::from_secs(10), 3).unwrap();
    for _ in 0..3 {
        assert!(s.gcra("crawlgate:agent:bot:net:1.2.3.0/24", limit).await.unwrap().allowed);
    }
    let denied = s.gcra("crawlgate:agent:bot:net:1.2.3.0/24", limit).await.unwrap();
    assert!(!denied.allowed);
    // tat = start + 30 s, tau = 20 s: the next slot opens 10 s after the
    // first request, minus the little time the four calls took.
    assert!(denied.retry_after > Duration::from_secs(9) && denied.retry_after <= Duration::from_secs(10), "{denied:?}");
    // The key is stored as given and lives until tat has passed, plus 1 s.
    let ttl = redis.command(&["PTTL", "crawlgate:agent:bot:net:1.2.3.0/24"]).as_int().unwrap();
    assert!(ttl > 30_000 && ttl <= 31_000, "PTTL {ttl}");
    // Another key is another bucket.
    assert!(s.gcra("crawlgate:agent:bot:net:1.2.4.0/24", limit).await.unwrap().allowed);
}

#[tokio::test]
async fn script_is_loaded_again_after_script_flush() {
    let redis = RedisServer::start();
    let s = connected(&redis).await;
    let limit = Gcra::per(1, Duration::from_secs(1), 1).unwrap();
    assert!(s.gcra("k", limit).await.unwrap().allowed);
    assert_eq!(redis.command(&["SCRIPT", "FLUSH"]), Resp::Simple("OK".into()));
    assert_eq!(
        redis.command(&["SCRIPT", "EXISTS", crawlgate_store_sha().as_str()]),
        Resp::Array(Some(vec![Resp::Int(0)]))
    );
    // The next call meets NOSCRIPT, loads the script and answers.
    assert!(!s.gcra("k", limit).await.unwrap().allowed);
    assert_eq!(
        redis.command(&["SCRIPT", "EXISTS", crawlgate_store_sha().as_str()]),
        Resp::Array(Some(vec![Resp::Int(1)]))
    );
    assert!(s.is_up());
    assert_eq!(s.errors_total(), 0);
}

fn crawlgate_store_sha() -> String {
    redis_sha1(crawlgate_store::GCRA_SCRIPT)
}

/// The script's SHA1 as Redis computes it, asked of Redis itself.
fn redis_sha1(script: &str) -> String {
    let redis = RedisServer::start();
    redis.command(&["SCRIPT", "LOAD", script]).as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_frozen_server_fails_within_the_budget_and_is_reconnected_when_it_thaws() {
    let redis = RedisServer::start();
    let s = Store::new(StoreConfig::new(redis.url())).unwrap();
    let maintainer = tokio::spawn({
        let s = s.clone();
        async move { s.maintain().await }
    });
    wait_up(&s, true).await;
    redis.pause();
    // Each call fails within its budget; the store counts as down only
    // after three in a row (one slow answer is that request's alone).
    for n in 1..=3 {
        let err = s.gcra("k", Gcra::per(1, Duration::from_secs(1), 1).unwrap()).await.unwrap_err();
        assert!(matches!(err, StoreError::Timeout { budget, .. } if budget == Duration::from_millis(5)), "{err}");
        assert_eq!(err.to_string(), format!("Redis at 127.0.0.1:{} did not answer within 5ms", redis.port()));
        assert_eq!(s.is_up(), n < 3, "after {n} timeouts");
    }
    // Down: calls are not tried, they fail at once and are counted.
    assert!(matches!(s.seen_once("n", Duration::from_secs(1)).await, Err(StoreError::Down { .. })));
    assert_eq!(s.errors_total(), 4);
    redis.resume();
    wait_up(&s, true).await;
    assert!(s.gcra("k2", Gcra::per(1, Duration::from_secs(1), 1).unwrap()).await.unwrap().allowed);
    maintainer.abort();
}

#[tokio::test]
async fn a_stopped_server_is_down_and_reconnected_when_started_again() {
    let mut redis = RedisServer::start();
    let s = store(&redis);
    let maintainer = tokio::spawn({
        let s = s.clone();
        async move { s.maintain().await }
    });
    wait_up(&s, true).await;
    let limit = Gcra::per(1, Duration::from_secs(60), 1).unwrap();
    assert!(s.gcra("k", limit).await.unwrap().allowed);
    redis.stop();
    assert!(s.gcra("k", limit).await.is_err());
    assert!(!s.is_up());
    assert!(s.gcra("k", limit).await.is_err());
    redis.start_again();
    wait_up(&s, true).await;
    // A new server (no persistence): the bucket starts afresh.
    assert!(s.gcra("k", limit).await.unwrap().allowed);
    assert!(!s.gcra("k", limit).await.unwrap().allowed);
    maintainer.abort();
}

#[tokio::test]
async fn an_unreachable_server_at_start_is_an_error_and_down() {
    let mut redis = RedisServer::start();
    let s = store(&redis);
    redis.stop();
    let err = s.connect().await.unwrap_err();
    assert!(matches!(err, StoreError::Redis { .. }), "{err}");
    assert!(err.to_string().starts_with(&format!("Redis at 127.0.0.1:{}: ", redis.port())), "{err}");
    assert!(!s.is_up());
}

#[tokio::test]
async fn a_wrong_password_is_a_clear_error_and_the_right_one_works() {
    let redis = RedisServer::start_with_password("right-one");
    let wrong = Store::new(StoreConfig::new(redis.url_with_password("wrong-one"))).unwrap();
    let err = wrong.connect().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Redis at 127.0.0.1:{} refused the password in the store URL (AUTH failed); \
             set the right one as redis://:PASSWORD@host:port/db",
            redis.port()
        )
    );
    assert!(!wrong.is_up());
    assert!(!err.to_string().contains("wrong-one"));
    // No password at all against a server that wants one.
    let none = Store::new(StoreConfig::new(format!("redis://127.0.0.1:{}/", redis.port()))).unwrap();
    assert!(matches!(none.connect().await, Err(StoreError::Auth { .. })));
    let right = connected(&redis).await;
    assert!(right.gcra("k", Gcra::per(1, Duration::from_secs(1), 1).unwrap()).await.unwrap().allowed);
}

#[tokio::test]
async fn seen_once_records_once_until_the_ttl() {
    let redis = RedisServer::start();
    let s = Store::new(StoreConfig {
        key_prefix: "cg1:".into(),
        timeout: Duration::from_secs(1),
        ..StoreConfig::new(redis.url())
    })
    .unwrap();
    s.connect().await.unwrap();
    assert!(!s.seen_once("sig-a", Duration::from_millis(300)).await.unwrap());
    assert!(s.seen_once("sig-a", Duration::from_millis(300)).await.unwrap());
    assert!(!s.seen_once("sig-b", Duration::from_millis(300)).await.unwrap());
    let ttl = redis.command(&["PTTL", "cg1:replay:sig-a"]).as_int().unwrap();
    assert!(ttl > 0 && ttl <= 300, "PTTL {ttl}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!s.seen_once("sig-a", Duration::from_millis(300)).await.unwrap());
}

#[tokio::test]
async fn fleet_counts_add_up_across_instances() {
    let redis = RedisServer::start();
    let a = connected(&redis).await;
    let b = connected(&redis).await;
    let now = 1_764_000_000;
    let minute = now / 60;
    let c = |minute, agent, counter, n| FleetCount { minute, agent, counter, n };
    a.fleet_publish(
        "a",
        now,
        &[
            c(minute, "GPTBot", "requests", 5),
            c(minute, "GPTBot", "blocked", 2),
            c(minute - 1, "GPTBot", "requests", 1),
        ],
    )
    .await
    .unwrap();
    b.fleet_publish(
        "b",
        now + 1,
        &[c(minute, "GPTBot", "requests", 7), c(minute, "browser", "requests", 3), c(minute, "x", "blocked", 0)],
    )
    .await
    .unwrap();
    // An instance that last reported 61 s ago is not counted.
    b.fleet_publish("old", now - 61, &[]).await.unwrap();
    assert_eq!(redis.command(&["HGET", &format!("crawlgate:fleet:{minute}"), "GPTBot:requests"]).as_int(), Some(12));
    let ttl = redis.command(&["TTL", &format!("crawlgate:fleet:{minute}")]).as_int().unwrap();
    assert!(ttl > 89_990 && ttl <= 90_000, "TTL {ttl}");
    let view = a.fleet_read(minute..=minute, now + 1).await.unwrap();
    assert_eq!(view.instances, 2);
    let totals: Vec<_> = view.totals.iter().map(|((a, c), n)| (a.as_str(), c.as_str(), *n)).collect();
    assert_eq!(totals, [("GPTBot", "blocked", 2), ("GPTBot", "requests", 12), ("browser", "requests", 3)]);
    let view = b.fleet_read(minute - 60..=minute, now + 1).await.unwrap();
    assert_eq!(view.get("GPTBot", "requests"), 13);
    assert_eq!(view.get("x", "blocked"), 0);
    let (instances, per_minute) = a.fleet_minutes(&[minute - 1, minute, minute + 1], now + 1).await.unwrap();
    assert_eq!(instances, 2);
    let flat: Vec<Vec<(&str, &str, u64)>> =
        per_minute.iter().map(|m| m.iter().map(|((a, c), n)| (a.as_str(), c.as_str(), *n)).collect()).collect();
    assert_eq!(
        flat,
        [
            vec![("GPTBot", "requests", 1)],
            vec![("GPTBot", "blocked", 2), ("GPTBot", "requests", 12), ("browser", "requests", 3)],
            vec![],
        ]
    );
}

#[tokio::test]
async fn a_caller_timeout_of_the_same_length_still_counts_and_marks_down() {
    let redis = RedisServer::start();
    let s = Store::new(StoreConfig::new(redis.url())).unwrap();
    s.connect().await.unwrap();
    redis.pause();
    // The limiter bounds each call with its own timeout of `[limits] timeout`.
    for n in 1..=3 {
        let outer = tokio::time::timeout(
            Duration::from_millis(5),
            s.gcra("k", Gcra::per(1, Duration::from_secs(1), 1).unwrap()),
        )
        .await;
        assert!(!matches!(outer, Ok(Ok(_))), "{outer:?}");
        assert_eq!(s.is_up(), n < 3, "after {n} timeouts");
    }
    assert_eq!(s.errors_total(), 3);
    redis.resume();
}

/// The ids of the clients connected to `redis`, but the one asking.
fn client_ids(redis: &RedisServer) -> Vec<String> {
    last_commands(redis).into_iter().map(|(id, _)| id).collect()
}

/// Each client's id and last command (as `CLIENT LIST` names it), but the
/// one asking.
fn last_commands(redis: &RedisServer) -> Vec<(String, String)> {
    let list = redis.command(&["CLIENT", "LIST"]);
    list.as_str()
        .unwrap()
        .lines()
        .filter(|l| !l.contains(" cmd=client|list "))
        .map(|l| {
            let field = |name: &str| l.split(' ').find_map(|f| f.strip_prefix(name)).unwrap_or_default().to_string();
            (field("id="), field("cmd="))
        })
        .collect()
}

/// Waits (up to 10 s) until `redis` has `n` clients besides the one asking.
fn wait_clients(redis: &RedisServer, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ids = client_ids(redis);
        if ids.len() == n {
            return ids;
        }
        assert!(Instant::now() < deadline, "{} clients, not {n}: {ids:?}", ids.len());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two runtimes as in the proxy: the store's connection kept on a
/// background service's (one thread, already maintaining `s`), the checks
/// made from the request runtime's (two threads).
fn two_runtimes(s: &Store) -> (tokio::runtime::Runtime, tokio::runtime::Runtime) {
    let runtime =
        |threads| tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build().unwrap();
    let background = runtime(1);
    background.spawn({
        let s = s.clone();
        async move { s.maintain().await }
    });
    (background, runtime(2))
}

#[test]
fn calls_from_another_runtime_use_a_connection_of_their_own_replaced_on_reconnection() {
    let redis = RedisServer::start();
    let s = store(&redis);
    let (background, requests) = two_runtimes(&s);
    let limit = Gcra::per(1, Duration::from_secs(3600), 1000).unwrap();
    let check = |key: &'static str| {
        let s = s.clone();
        requests.block_on(async move { requests_check(&s, key, limit).await })
    };
    requests.block_on(wait_up(&s, true));
    let maintained = wait_clients(&redis, 1);
    // The first check goes through the maintained connection and opens
    // the request runtime's own.
    assert!(check("a"));
    let both = wait_clients(&redis, 2);
    assert!(both.contains(&maintained[0]), "{both:?}");
    // Redis lists the new connection before the store has it ready (its
    // handshake still under way): checks go on through the maintained
    // connection until one is seen on the runtime's own.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !last_commands(&redis).iter().any(|(id, cmd)| *id != maintained[0] && cmd == "evalsha") {
        assert!(Instant::now() < deadline, "no check on the runtime's own connection: {:?}", last_commands(&redis));
        assert!(check("a"));
    }
    // With the maintained connection gone, the request runtime's checks
    // still answer: they do not use it.
    assert_eq!(redis.command(&["CLIENT", "KILL", "ID", &maintained[0]]), Resp::Int(1));
    for _ in 0..20 {
        assert!(check("a"));
    }
    assert!(s.is_up());
    assert_eq!(s.errors_total(), 0);
    // A call on the maintaining runtime finds its connection closed: the
    // store is down, reconnects, and the request runtime gets a new
    // connection of its own in place of the old one, which is closed.
    let lost = background.block_on({
        let s = s.clone();
        async move { s.gcra("b", limit).await }
    });
    assert!(matches!(lost, Err(StoreError::Redis { .. })), "{lost:?}");
    requests.block_on(wait_up(&s, true));
    assert!(check("a"));
    // Two clients, neither of before: the old runtime connection may close
    // after the new ones are listed.
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let ids = client_ids(&redis);
        if ids.len() == 2 && !ids.iter().any(|id| both.contains(id)) {
            break ids;
        }
        assert!(Instant::now() < deadline, "{both:?} then {ids:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!after.iter().any(|id| both.contains(id)), "{both:?} then {after:?}");
    assert!(check("a"));
    assert_eq!(s.errors_total(), 1);
}

#[test]
fn a_runtime_whose_own_connection_fails_uses_the_maintained_one_and_tries_again_later() {
    let redis = RedisServer::start();
    let s = store(&redis);
    let (_background, requests) = two_runtimes(&s);
    let limit = Gcra::per(1, Duration::from_secs(3600), 1000).unwrap();
    requests.block_on(wait_up(&s, true));
    let maintained = wait_clients(&redis, 1);
    // A new connection cannot load the script: the request runtime's own
    // connection fails to open, the maintained one still runs it.
    assert_eq!(redis.command(&["ACL", "SETUSER", "default", "-script|load"]), Resp::Simple("OK".into()));
    let check = || {
        let s = s.clone();
        assert!(requests.block_on(async move { requests_check(&s, "a", limit).await }));
    };
    // The first check opens the runtime's connection in the background:
    // wait until that attempt has failed and its socket has closed.
    check();
    let deadline = Instant::now() + Duration::from_secs(10);
    while acl_denials(&redis).is_empty() {
        assert!(Instant::now() < deadline, "the runtime's connection was never tried");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(wait_clients(&redis, 1), maintained);
    // Then the checks do not try again on every call: the next attempt
    // waits a second, the one after two (a check takes well under 20 ms
    // here; on a machine so loaded that 50 take 3 s, a third attempt).
    for _ in 0..50 {
        check();
    }
    assert_eq!(scripts_run(&redis), 51);
    let denied = acl_denials(&redis);
    assert!(denied.len() == 1 && (1..=3).contains(&denied[0].1), "{denied:?}");
    assert!(s.is_up());
    assert_eq!(s.errors_total(), 0);
    // Once connections can load the script again, a later attempt opens
    // the runtime's own connection and the checks move to it.
    assert_eq!(redis.command(&["ACL", "SETUSER", "default", "+script|load"]), Resp::Simple("OK".into()));
    let deadline = Instant::now() + Duration::from_secs(15);
    while !last_commands(&redis).iter().any(|(id, cmd)| *id != maintained[0] && cmd == "evalsha") {
        assert!(Instant::now() < deadline, "the runtime's connection was not tried again: {:?}", last_commands(&redis));
        check();
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Each `ACL LOG` entry's object (the command refused) and how many times
/// it was refused.
fn acl_denials(redis: &RedisServer) -> Vec<(String, i64)> {
    let array = |r: &Resp| match r {
        Resp::Array(Some(items)) => items.clone(),
        other => unreachable!("not an array: {other:?}"),
    };
    array(&redis.command(&["ACL", "LOG"]))
        .iter()
        .map(|entry| {
            let fields = array(entry);
            let field =
                |name: &str| fields.chunks(2).find(|kv| kv[0].as_str() == Some(name)).map(|kv| kv[1].clone()).unwrap();
            (field("object").as_str().unwrap().to_string(), field("count").as_int().unwrap())
        })
        .collect()
}

/// How many scripts `redis` has run (`EVALSHA` and `EVAL` calls).
fn scripts_run(redis: &RedisServer) -> u64 {
    let info = redis.command(&["INFO", "commandstats"]);
    info.as_str()
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| l.split_once("calls=")?.1.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// One check of `key` on the current runtime: admitted or not.
async fn requests_check(s: &Store, key: &str, limit: Gcra) -> bool {
    s.gcra(key, limit).await.unwrap().allowed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_answer_that_arrived_while_the_runtime_was_stalled_is_taken_not_timed_out() {
    let redis = std::sync::Arc::new(RedisServer::start());
    // The default budget, 5 ms, and a runtime that does not run for 20 ms
    // (a process the machine did not schedule): when the worker runs
    // again, the check's timer has fired and its answer is in the socket.
    let s = Store::new(StoreConfig::new(redis.url())).unwrap();
    let limit = Gcra::per(1, Duration::from_secs(3600), 1000).unwrap();
    tokio::spawn({
        let s = s.clone();
        async move { s.connect().await }
    })
    .await
    .unwrap()
    .unwrap();
    for round in 0..20 {
        let before = scripts_run(&redis);
        let answer = tokio::spawn({
            let (s, redis) = (s.clone(), redis.clone());
            async move {
                let check = tokio::spawn({
                    let s = s.clone();
                    async move { s.gcra(if round % 2 == 0 { "a" } else { "b" }, limit).await }
                });
                // The check sends its command, then the only worker stalls
                // (at least 20 ms, and until Redis has run the script: its
                // answer is then in the socket).
                tokio::task::yield_now().await;
                std::thread::sleep(Duration::from_millis(20));
                let until = Instant::now() + Duration::from_secs(2);
                while scripts_run(&redis) == before && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                check.await.unwrap()
            }
        })
        .await
        .unwrap();
        assert!(answer.as_ref().is_ok_and(|a| a.allowed), "round {round}: {answer:?}");
    }
    assert_eq!(s.errors_total(), 0);
    assert!(s.is_up());
}
