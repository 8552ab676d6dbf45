use super::sqlite::SCHEMA;
use super::writer::BYTES_DELAY;
use super::*;
use rusqlite::Connection;

fn record(i: u64, agent: &str) -> Record {
    Record {
        charge_id: format!("c{i:04}"),
        time_ms: 1_764_093_845_120 + i64::try_from(i).unwrap() * 1000,
        request_id: format!("0a1b2c3d-{i}"),
        host: "example.com".to_string(),
        agent: agent.to_string(),
        subject: "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U".to_string(),
        path: if i == 1 { "/a,b?q=\"x\"".to_string() } else { format!("/page/{i}") },
        amount_minor: 1 + i,
        currency: "USD".to_string(),
        exponent: 2,
        dialect: "crawler-price".to_string(),
        settlement: None,
        evidence: None,
        status: 200,
        bytes: Some(1024),
        instance: "edge-1".to_string(),
        voids: None,
        void: None,
    }
}

#[tokio::test]
async fn concurrent_charges_are_committed_before_they_are_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let l = ledger.clone();
        tasks.push(tokio::spawn(async move { l.record(record(i, "ExampleBot")).await.unwrap() }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap());
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 200);
    // Acknowledged means committed: another connection sees every row.
    let rows = Reader::open(&path).unwrap().export(0).unwrap();
    assert_eq!(rows.len(), 200);
    assert!(ledger.healthy());
    ledger.set_bytes("c0000", 7);
    // The update rides on the next batch.
    ledger.record(record(500, "ExampleBot")).await.unwrap();
    let first = Reader::open(&path).unwrap().export(0).unwrap();
    assert_eq!(first.iter().find(|r| r.request_id == "0a1b2c3d-0").unwrap().bytes, Some(7));
}

/// A byte count with no charge after it is not left waiting: it is
/// committed alone after `BYTES_DELAY`.
#[tokio::test]
async fn a_byte_count_alone_is_committed_after_the_delay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    let id = ledger.record(record(0, "ExampleBot")).await.unwrap();
    ledger.set_bytes(&id, 7);
    let bytes = || Reader::open(&path).unwrap().export(0).unwrap()[0].bytes;
    let started = std::time::Instant::now();
    while bytes() != Some(7) {
        assert!(started.elapsed() < BYTES_DELAY * 5, "the byte count was never committed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A flush (at a clean shutdown) commits a waiting byte count at once,
/// and answers at once when nothing waits.
#[tokio::test]
async fn a_flush_commits_the_waiting_byte_counts_now() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    ledger.flush().await;
    let id = ledger.record(record(0, "ExampleBot")).await.unwrap();
    ledger.set_bytes(&id, 7);
    ledger.flush().await;
    // Committed when the flush returns, not BYTES_DELAY later.
    assert_eq!(Reader::open(&path).unwrap().export(0).unwrap()[0].bytes, Some(7));
}

#[tokio::test]
async fn a_locked_ledger_refuses_the_charge_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    ledger.record(record(0, "ExampleBot")).await.unwrap();
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let err = ledger.record(record(1, "ExampleBot")).await.unwrap_err().to_string();
    assert!(err.contains("database is locked"), "{err}");
    assert!(!ledger.healthy());
    other.execute_batch("COMMIT").unwrap();
    ledger.record(record(2, "ExampleBot")).await.unwrap();
    assert!(ledger.healthy());
    let ids: Vec<String> = Reader::open(&path).unwrap().export(0).unwrap().into_iter().map(|r| r.request_id).collect();
    assert_eq!(ids, ["0a1b2c3d-0", "0a1b2c3d-2"]);
}

#[test]
fn a_ledger_that_cannot_be_written_does_not_open() {
    let err = Ledger::open(Path::new("/nonexistent-dir/ledger.sqlite")).err().unwrap().to_string();
    assert!(err.starts_with("ledger /nonexistent-dir/ledger.sqlite: unable to open"), "{err}");
}

#[test]
fn export_formats_are_golden() {
    let rows = vec![
        record(0, "ExampleBot"),
        record(1, "Other-Bot"),
        Record {
            settlement: Some("0xabc".into()),
            evidence: Some("{\"license\":{\"jti\":\"t-1\",\"iss\":\"https://license.example\"}}".into()),
            bytes: None,
            exponent: 0,
            currency: "JPY".into(),
            ..record(2, "ExampleBot")
        },
        Record {
            charge_id: "c0002:void".into(),
            time_ms: record(3, "ExampleBot").time_ms,
            status: 502,
            bytes: Some(0),
            voids: Some("c0002".into()),
            void: Some("origin: cut short, 0 of 1024 bytes".into()),
            ..record(2, "ExampleBot")
        },
    ];
    assert_eq!(
        to_csv(&rows),
        "time,charge_id,request_id,instance,host,agent,payer,dialect,path,currency,amount,amount_minor,status,bytes,settlement,evidence,voids,void\n\
         2025-11-25T18:04:05.120Z,c0000,0a1b2c3d-0,edge-1,example.com,ExampleBot,poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U,crawler-price,/page/0,USD,0.01,1,200,1024,,,,\n\
         2025-11-25T18:04:06.120Z,c0001,0a1b2c3d-1,edge-1,example.com,Other-Bot,poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U,crawler-price,\"/a,b?q=\"\"x\"\"\",USD,0.02,2,200,1024,,,,\n\
         2025-11-25T18:04:07.120Z,c0002,0a1b2c3d-2,edge-1,example.com,ExampleBot,poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U,crawler-price,/page/2,JPY,3,3,200,,0xabc,\"{\"\"license\"\":{\"\"jti\"\":\"\"t-1\"\",\"\"iss\"\":\"\"https://license.example\"\"}}\",,\n\
         2025-11-25T18:04:08.120Z,c0002:void,0a1b2c3d-2,edge-1,example.com,ExampleBot,poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U,crawler-price,/page/2,USD,0.03,3,502,0,,,c0002,\"origin: cut short, 0 of 1024 bytes\"\n"
    );
    assert_eq!(
        to_json_lines(&rows[2..3]),
        "{\"agent\":\"ExampleBot\",\"amount\":\"3\",\"amount_minor\":3,\"bytes\":null,\"charge_id\":\"c0002\",\"currency\":\"JPY\",\"dialect\":\"crawler-price\",\"evidence\":{\"license\":{\"iss\":\"https://license.example\",\"jti\":\"t-1\"}},\"host\":\"example.com\",\"instance\":\"edge-1\",\"path\":\"/page/2\",\"payer\":\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\",\"request_id\":\"0a1b2c3d-2\",\"settlement\":\"0xabc\",\"status\":200,\"time\":\"2025-11-25T18:04:07.120Z\",\"void\":null,\"voids\":null}\n"
    );
}

/// A value a spreadsheet would run as a formula (OWASP "CSV Injection")
/// starts with a `'` in the export: `=`, `+`, `-`, `@`, tab and carriage
/// return; one that only holds them later is left alone.
#[test]
fn csv_export_neutralises_formulas() {
    let cases = [
        ("=HYPERLINK(\"http://evil.example\",\"x\")", "\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"x\"\")\""),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tcmd", "'\tcmd"),
        ("\rcmd", "\"'\rcmd\""),
        ("a=b", "a=b"),
        ("key-1", "key-1"),
    ];
    for (payer, field) in cases {
        let csv = to_csv(&[Record { subject: payer.to_string(), ..record(0, "ExampleBot") }]);
        let line = csv.lines().nth(1).unwrap();
        let want = format!(",ExampleBot,{field},crawler-price,");
        assert!(line.contains(&want), "{payer:?}: {line}");
    }
}

#[tokio::test]
async fn summary_is_per_day_agent_and_currency() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    for (i, agent, day) in [(0, "ExampleBot", 0), (1, "ExampleBot", 0), (2, "Other-Bot", 0), (3, "ExampleBot", 1)] {
        let mut r = record(i, agent);
        r.time_ms += day * 86_400_000;
        ledger.record(r).await.unwrap();
    }
    let reader = Reader::open(&path).unwrap();
    assert_eq!(
        summary_table(&reader.summary(0).unwrap()),
        "day         agent                     currency   charges          amount\n\
         2025-11-25  ExampleBot                USD              2            0.03\n\
         2025-11-25  Other-Bot                 USD              1            0.03\n\
         2025-11-26  ExampleBot                USD              1            0.04\n"
    );
    let since = parse_since("2025-11-26").unwrap();
    assert_eq!(reader.export(since).unwrap().len(), 1);
}

/// A void row cancels its charge in the summary; the export keeps both.
#[tokio::test]
async fn void_rows_net_out_of_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    for i in 0..3 {
        ledger.record(record(i, "ExampleBot")).await.unwrap();
    }
    ledger.void("c0001", 502, 10, "decode: invalid gzip header".into()).await;
    // Twice (a repeated drain, say): one void row.
    ledger.void("c0001", 502, 10, "decode: invalid gzip header".into()).await;
    ledger.flush().await;
    let reader = Reader::open(&path).unwrap();
    let mut by_agent = Summarizer::new(&[GroupBy::Agent]);
    reader
        .each(Filter::default(), &mut |r| {
            by_agent.add(&r);
            Ok(())
        })
        .unwrap();
    assert_eq!(
        summary_table(&by_agent.finish()),
        "agent                     currency   charges          amount\n\
         ExampleBot                USD              2            0.04\n"
    );
    // By day, the void is a negative line on the day it was made.
    let days = reader.summary(0).unwrap();
    assert_eq!((days.len(), days[1].charges, days[1].amount_minor), (2, -1, -2));
    let rows = reader.export(0).unwrap();
    let voids: Vec<(&str, &str, Option<&str>, Option<&str>)> = rows
        .iter()
        .filter(|r| r.void.is_some())
        .map(|r| (r.charge_id.as_str(), r.request_id.as_str(), r.voids.as_deref(), r.void.as_deref()))
        .collect();
    assert_eq!(
        (rows.len(), voids),
        (4, vec![("c0001:void", "0a1b2c3d-1", Some("c0001"), Some("decode: invalid gzip header"))])
    );
}

/// A ledger written before void rows existed gains the column when it is
/// opened for writing, and reads as it did before that.
#[tokio::test]
async fn a_ledger_without_the_void_column_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&SCHEMA.replace(",\n    void TEXT", "")).unwrap();
        conn.execute_batch("INSERT INTO charges (time_ms, request_id, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, status, bytes, instance) VALUES (1764093845120, 'a-1', 'ExampleBot', '', '/x', 1, 'USD', 2, 'x402', NULL, 200, 5, 'edge-1')").unwrap();
    }
    assert_eq!(Reader::open(&path).unwrap().export(0).unwrap()[0].void, None);
    assert_eq!(Reader::open(&path).unwrap().summary(0).unwrap()[0].charges, 1);
    let ledger = Ledger::open(&path).unwrap();
    ledger.record(Record { void: Some("origin: reset".into()), ..record(0, "ExampleBot") }).await.unwrap();
    let reader = Reader::open(&path).unwrap();
    assert_eq!(reader.summary(0).unwrap()[0].charges, 0);
}

#[test]
fn since_parses_dates_times_and_seconds() {
    let cases: &[(&str, Result<i64, ()>)] = &[
        ("1970-01-01", Ok(0)),
        ("2025-11-25", Ok(1_764_028_800_000)),
        ("2025-11-25T18:04:05Z", Ok(1_764_093_845_000)),
        ("1764093845", Ok(1_764_093_845_000)),
        ("2024-02-29", Ok(1_709_164_800_000)),
        ("2025-13-01", Err(())),
        ("2025-11-25T18:04:05", Err(())),
        ("yesterday", Err(())),
        ("", Err(())),
    ];
    for (input, want) in cases {
        assert_eq!(parse_since(input).map_err(|_| ()), *want, "{input}");
    }
    assert_eq!(rfc3339(1_709_164_800_000), "2024-02-29T00:00:00.000Z");
    assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
}

#[test]
fn since_is_a_calendar_date() {
    assert!(parse_since("2025-02-29").is_err());
    assert!(parse_since("2025-04-31").is_err());
    assert_eq!(parse_since("2024-12-31T23:59:60Z").ok(), parse_since("2025-01-01").ok());
}

/// A charge recorded twice under one charge id (a spool drained again)
/// is one row.
#[tokio::test]
async fn a_charge_id_is_recorded_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    assert_eq!(ledger.record(record(7, "ExampleBot")).await.unwrap(), "c0007");
    assert_eq!(ledger.record(record(7, "ExampleBot")).await.unwrap(), "c0007");
    let fresh = ledger.record(Record { charge_id: String::new(), ..record(8, "ExampleBot") }).await.unwrap();
    assert_eq!(fresh.len(), 32, "{fresh}");
    let ids: Vec<String> = Reader::open(&path).unwrap().export(0).unwrap().into_iter().map(|r| r.charge_id).collect();
    assert_eq!(ids, ["c0007".to_string(), fresh]);
}

/// The file removed under the running ledger: the next charge is refused
/// (unavailable: a 503), health drops to 0 even without a charge, and the
/// status says why. SQLite alone would have gone on committing into the
/// deleted file.
#[tokio::test]
async fn a_removed_ledger_file_refuses_charges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    ledger.record(record(0, "ExampleBot")).await.unwrap();
    std::fs::remove_file(&path).unwrap();
    // The writer's tick notices it with no charge coming.
    let started = std::time::Instant::now();
    while ledger.healthy() {
        assert!(started.elapsed() < TICK * 20, "the removed file was never noticed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let err = ledger.record(record(1, "ExampleBot")).await.unwrap_err();
    assert!(err.unavailable(), "{err:?}");
    let want = format!(
        "ledger {}: the file was removed under the running proxy; charging stops until crawlgate is restarted",
        path.display()
    );
    assert_eq!(err.to_string(), want);
    let status = ledger.status();
    assert_eq!((status.backend, status.healthy, status.error), ("sqlite", false, Some(want)));
}

/// The file replaced (a backup restored over it, say): refused as well,
/// and nothing is written into the new file.
#[tokio::test]
async fn a_replaced_ledger_file_refuses_charges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).unwrap();
    ledger.record(record(0, "ExampleBot")).await.unwrap();
    let other = dir.path().join("other.sqlite");
    drop(Ledger::open(&other).unwrap());
    std::fs::rename(&other, &path).unwrap();
    let err = ledger.record(record(1, "ExampleBot")).await.unwrap_err();
    assert!(err.unavailable(), "{err:?}");
    assert!(err.to_string().ends_with("the file was replaced under the running proxy; charging stops until crawlgate is restarted on the right file"), "{err}");
    assert!(!ledger.healthy());
    // (What a reader of the new file sees of the old one's WAL is
    // SQLite's business; the refused charge is in neither.)
    assert!(Reader::open(&path).unwrap().export(0).unwrap().iter().all(|r| r.charge_id != "c0001"));
}

/// A file of an older crawlgate, read without being migrated: its rows
/// get `<instance>:<row>` charge ids and an empty host.
#[test]
fn an_old_ledger_reads_with_derived_charge_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch("INSERT INTO charges (time_ms, request_id, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, status, bytes, instance) VALUES (1764093845120, 'a-1', 'ExampleBot', 'k', '/x', 1, 'USD', 2, 'x402', NULL, 200, 5, 'edge-1')").unwrap();
    let rows = Reader::open(&path).unwrap().export(0).unwrap();
    assert_eq!((rows[0].charge_id.as_str(), rows[0].host.as_str()), ("edge-1:1", ""));
}

/// Summaries by host, payer and month, from several files at once, with
/// `--until` excluding its own instant.
#[tokio::test]
async fn summaries_group_by_host_payer_and_month() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    let la = Ledger::open(&a).unwrap();
    let lb = Ledger::open(&b).unwrap();
    la.record(record(0, "ExampleBot")).await.unwrap();
    la.record(Record { host: "shop.example.com".into(), ..record(1, "ExampleBot") }).await.unwrap();
    lb.record(Record { subject: "other-key".into(), ..record(2, "ExampleBot") }).await.unwrap();
    let mut late = record(3, "ExampleBot");
    late.time_ms += 40 * 86_400_000;
    lb.record(late.clone()).await.unwrap();
    let by = GroupBy::parse_list("month,host,payer").unwrap();
    let mut s = Summarizer::new(&by);
    let filter = Filter { since_ms: 0, until_ms: late.time_ms };
    for file in [&a, &b] {
        Reader::open(file)
            .unwrap()
            .each(filter, &mut |r| {
                s.add(&r);
                Ok(())
            })
            .unwrap();
    }
    assert_eq!(
        summary_table_by(&by, &s.finish()),
        "month    host                      payer                                        currency   charges          amount\n\
         2025-11  example.com               other-key                                    USD              1            0.03\n\
         2025-11  example.com               poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U  USD              1            0.01\n\
         2025-11  shop.example.com          poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U  USD              1            0.02\n"
    );
    assert_eq!(
        GroupBy::parse_list("day,week").unwrap_err().to_string(),
        "--group-by: `week` is not one of host, agent, payer, day, month"
    );
}

#[test]
fn postgres_urls_are_masked() {
    for (url, masked) in [
        ("postgres://crawlgate:s3cret@db.internal:5432/ledger", "postgres://crawlgate:***@db.internal:5432/ledger"),
        (
            "postgresql://db/ledger?user=x&password=s3cret&sslmode=disable",
            "postgresql://db/ledger?user=x&password=***&sslmode=disable",
        ),
        ("postgres://crawlgate@db/ledger", "postgres://crawlgate@db/ledger"),
        ("postgres://u:p%40ss@db", "postgres://u:***@db"),
    ] {
        assert_eq!(mask_url(url), masked);
    }
}
