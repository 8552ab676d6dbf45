//! The PostgreSQL ledger against a real server (`crawlgate_testkit::postgres`):
//! idempotent charges, the schema's version, the spool when the server is
//! killed, paused or not there at start, and the count after it comes
//! back: no announced charge lost, none doubled.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

use crawlgate_testkit::postgres::{PgServer, PASSWORD};

use super::*;

thread_local! {
    /// The spool's bound for ledgers opened on this thread.
    pub(super) static SPOOL_MAX: Cell<u64> = const { Cell::new(postgres::SPOOL_MAX) };
}

fn record(i: u64) -> Record {
    Record {
        charge_id: String::new(),
        time_ms: 1_764_093_845_120 + i64::try_from(i).unwrap(),
        request_id: format!("req-{i}"),
        host: "example.com".into(),
        agent: "ExampleBot".into(),
        subject: "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U".into(),
        path: format!("/page/{i}"),
        amount_minor: 1,
        currency: "USD".into(),
        exponent: 2,
        dialect: "crawler-price".into(),
        settlement: None,
        evidence: Some("{\"signature\":{\"input\":\"sig1=(\\\"@authority\\\")\",\"value\":\"sig1=:AAAA:\"}}".into()),
        status: 200,
        bytes: Some(10),
        instance: "edge-1".into(),
        voids: None,
        void: None,
    }
}

fn target(pg: &PgServer, dir: &tempfile::TempDir) -> Target {
    let password = dir.path().join("pg-password");
    std::fs::write(&password, format!("{PASSWORD}\n")).unwrap();
    Target::Postgres {
        url: pg.url_without_password(),
        spool: dir.path().join("spool.sqlite"),
        password_file: Some(password),
    }
}

/// Waits until `f` holds, checking every 50 ms; panics with `what` after
/// a minute (a bound on a hang, not a timed assertion).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !f() {
        assert!(started.elapsed() < Duration::from_secs(60), "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Opens the ledger and waits until it is connected.
async fn open(pg: &PgServer, dir: &tempfile::TempDir) -> Ledger {
    let ledger = Ledger::open_target(&target(pg, dir)).unwrap();
    until("connected", || ledger.status().postgres_up == Some(true)).await;
    ledger
}

fn count(pg: &PgServer, sql: &str) -> u64 {
    pg.query(sql).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charges_land_in_postgres_once_with_their_evidence() {
    let pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let ledger = open(&pg, &dir).await;
    let mut tasks = Vec::new();
    for i in 0..100 {
        let l = ledger.clone();
        tasks.push(tokio::spawn(async move { l.record(record(i)).await.unwrap() }));
    }
    let mut ids = BTreeSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap());
    }
    assert_eq!(ids.len(), 100);
    assert_eq!(count(&pg, "SELECT count(*) FROM crawlgate_charges"), 100);
    // The same charge id again (a drain repeated): still one row.
    let first = ids.iter().next().unwrap().clone();
    let again = ledger.record(Record { charge_id: first.clone(), ..record(0) }).await.unwrap();
    assert_eq!(again, first);
    ledger.set_bytes(&first, 7);
    ledger.void(&first, 502, 7, "origin: reset".into()).await;
    ledger.flush().await;
    assert_eq!(
        pg.query(&format!(
            "SELECT bytes, voids, void, status FROM crawlgate_charges WHERE charge_id LIKE '{first}%' ORDER BY id"
        )),
        format!("7|||200\n7|{first}|origin: reset|502")
    );
    assert_eq!(pg.query("SELECT version FROM crawlgate_schema_version"), "1");
    let status = ledger.status();
    assert_eq!(
        (status.backend, status.healthy, status.postgres_up, status.spool_rows, status.error),
        ("postgres", true, Some(true), 0, None)
    );
    assert_eq!(status.target, pg.url_without_password());
    // Read back through the exporter, streamed from a cursor (blocking:
    // `crawlgate ledger export` has no runtime of its own).
    let url = pg.url();
    let rows =
        tokio::task::spawn_blocking(move || Reader::open_source(&url, None).unwrap().export(0).unwrap()).await.unwrap();
    assert_eq!(rows.len(), 101);
    assert_eq!(rows.iter().filter(|r| r.void.is_some()).count(), 1);
    assert!(rows.iter().all(|r| r.evidence.as_deref() == record(0).evidence.as_deref() && r.host == "example.com"));
}

/// Many writers charging while the server is SIGKILLed and started again:
/// every charge answered `Ok` is in PostgreSQL exactly once after the
/// spool drained; nothing was refused meanwhile (the spool took it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_postgres_loses_no_announced_charge_and_doubles_none() {
    let mut pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let ledger = open(&pg, &dir).await;
    ledger.record(record(0)).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..16u64 {
        let (l, stop) = (ledger.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let mut refused = 0u64;
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                match l.record(record(w * 1_000_000 + i)).await {
                    Ok(id) => acked.push(id),
                    Err(_) => refused += 1,
                }
            }
            (acked, refused)
        }));
    }
    until("charges before the kill", || count(&pg, "SELECT count(*) FROM crawlgate_charges") > 200).await;
    pg.kill();
    until("charges spooled", || ledger.status().spool_rows > 200).await;
    assert_eq!(ledger.status().postgres_up, Some(false));
    pg.start_again();
    until("the spool draining with charges going on", || ledger.status().postgres_up == Some(true)).await;
    stop.store(true, Ordering::Relaxed);
    let mut acked = BTreeSet::new();
    let mut total = 1;
    for w in writers {
        let (ids, refused) = w.await.unwrap();
        assert_eq!(refused, 0);
        total += ids.len();
        acked.extend(ids);
    }
    assert_eq!(acked.len() + 1, total, "a charge id was handed out twice");
    ledger.flush().await;
    until("the spool drained", || ledger.status().spool_rows == 0).await;
    let in_pg: BTreeSet<String> =
        pg.query("SELECT charge_id FROM crawlgate_charges").lines().map(String::from).collect();
    let lost: Vec<&String> = acked.difference(&in_pg).collect();
    assert!(lost.is_empty(), "{} announced charges lost, e.g. {:?}", lost.len(), lost.first());
    // Unique by charge id: no row twice; and no row nobody asked for.
    assert_eq!(count(&pg, "SELECT count(*) - count(DISTINCT charge_id) FROM crawlgate_charges"), 0);
    assert!(in_pg.len() <= total, "{} rows for {total} charges", in_pg.len());
    assert_eq!(ledger.status().error, None);
}

/// PostgreSQL not there at start: the ledger opens, charges go to the
/// spool, and drain once it is started.
#[tokio::test]
async fn postgres_down_at_start_spools_then_drains() {
    let mut pg = PgServer::start();
    pg.kill();
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open_target(&target(&pg, &dir)).unwrap();
    for i in 0..5 {
        ledger.record(record(i)).await.unwrap();
    }
    until("the error", || ledger.status().error.is_some()).await;
    let status = ledger.status();
    assert_eq!((status.healthy, status.postgres_up, status.spool_rows), (true, Some(false), 5));
    assert!(status.error.as_deref().unwrap().starts_with("PostgreSQL: "), "{status:?}");
    pg.start_again();
    until("the spool drained", || ledger.status().spool_rows == 0).await;
    assert_eq!(count(&pg, "SELECT count(*) FROM crawlgate_charges"), 5);
}

/// A server that does not answer (SIGSTOP) is slow past the bound: the
/// charge is committed to the spool instead, answered; it drains when the
/// server answers again.
#[tokio::test]
async fn a_frozen_postgres_sends_charges_to_the_spool() {
    let pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let ledger = open(&pg, &dir).await;
    ledger.record(record(0)).await.unwrap();
    pg.pause();
    let id = ledger.record(record(1)).await.unwrap();
    assert_eq!(ledger.status().spool_rows, 1);
    pg.resume();
    until("the spool drained", || ledger.status().spool_rows == 0).await;
    assert_eq!(pg.query(&format!("SELECT count(*) FROM crawlgate_charges WHERE charge_id = '{id}'")), "1");
}

/// Past its bound the spool refuses charges as unavailable (a 503 with
/// Retry-After), and takes them again once it drained.
#[tokio::test]
async fn a_full_spool_refuses_charges_until_it_drains() {
    let mut pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    SPOOL_MAX.with(|c| c.set(3));
    let ledger = open(&pg, &dir).await;
    ledger.record(record(0)).await.unwrap();
    pg.kill();
    for i in 1..=3 {
        ledger.record(record(i)).await.unwrap();
    }
    let err = ledger.record(record(4)).await.unwrap_err();
    assert!(err.unavailable(), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "ledger {}: PostgreSQL does not answer and the spool holds 3 rows, its bound; charging resumes as it drains",
            pg.url_without_password()
        )
    );
    assert!(!ledger.healthy());
    pg.start_again();
    until("the spool drained", || ledger.status().spool_rows == 0).await;
    ledger.record(record(5)).await.unwrap();
    assert!(ledger.healthy());
    assert_eq!(count(&pg, "SELECT count(*) FROM crawlgate_charges"), 5);
}

/// A wrong password: the error names the database without the password,
/// and the charges wait in the spool.
#[tokio::test]
async fn a_wrong_password_is_reported_without_it() {
    let pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = pg.url().replace(PASSWORD, "not-the-password");
    let target = Target::Postgres { url, spool: dir.path().join("spool.sqlite"), password_file: None };
    let ledger = Ledger::open_target(&target).unwrap();
    ledger.record(record(0)).await.unwrap();
    until("the error", || ledger.status().error.is_some()).await;
    let status = ledger.status();
    assert_eq!(status.target, format!("postgres://crawlgate:***@127.0.0.1:{}/postgres", pg.port()));
    let error = status.error.unwrap();
    assert!(error.contains("password authentication failed"), "{error}");
    assert!(!error.contains("not-the-password"));
}

/// A database migrated by a newer crawlgate is not written to.
#[test]
fn a_newer_schema_is_refused() {
    let pg = PgServer::start();
    assert_eq!(migrate_postgres(&pg.url(), None).unwrap(), (0, 1));
    assert_eq!(migrate_postgres(&pg.url(), None).unwrap(), (1, 1));
    pg.query("INSERT INTO crawlgate_schema_version VALUES (2, 0)");
    let err = migrate_postgres(&pg.url(), None).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "ledger {}: the database's ledger schema is version 2, newer than this crawlgate's (1): run a newer crawlgate",
            pg.url().replace(PASSWORD, "***")
        )
    );
}
