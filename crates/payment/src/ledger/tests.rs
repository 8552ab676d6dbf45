use super::*;

fn record(i: u64, agent: &str) -> Record {
    Record {
        time_ms: 1_764_093_845_120 + i64::try_from(i).unwrap() * 1000,
        request_id: format!("0a1b2c3d-{i}"),
        agent: agent.to_string(),
        subject: "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U".to_string(),
        path: if i == 1 { "/a,b?q=\"x\"".to_string() } else { format!("/page/{i}") },
        amount_minor: 1 + i,
        currency: "USD".to_string(),
        exponent: 2,
        dialect: "crawler-price".to_string(),
        settlement: None,
        status: 200,
        bytes: Some(1024),
        instance: "edge-1".to_string(),
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
    ledger.set_bytes(ids[0], 7);
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
    ledger.set_bytes(id, 7);
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
    ledger.set_bytes(id, 7);
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
            bytes: None,
            exponent: 0,
            currency: "JPY".into(),
            ..record(2, "ExampleBot")
        },
        Record {
            time_ms: record(3, "ExampleBot").time_ms,
            status: 502,
            bytes: Some(0),
            void: Some("origin: cut short, 0 of 1024 bytes".into()),
            ..record(2, "ExampleBot")
        },
    ];
    assert_eq!(
        to_csv(&rows),
        "time,request_id,instance,agent,subject,dialect,path,currency,amount,amount_minor,status,bytes,settlement,void\n\
         2025-11-25T18:04:05.120Z,0a1b2c3d-0,edge-1,ExampleBot,poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U,crawler-price,/page/0,USD,0.01,1,200,1024,,\n\
         2025-11-25T18:04:06.120Z,0a1b2c3d-1,edge-1,Other-Bot,poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U,crawler-price,\"/a,b?q=\"\"x\"\"\",USD,0.02,2,200,1024,,\n\
         2025-11-25T18:04:07.120Z,0a1b2c3d-2,edge-1,ExampleBot,poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U,crawler-price,/page/2,JPY,3,3,200,,0xabc,\n\
         2025-11-25T18:04:08.120Z,0a1b2c3d-2,edge-1,ExampleBot,poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U,crawler-price,/page/2,USD,0.03,3,502,0,,\"origin: cut short, 0 of 1024 bytes\"\n"
    );
    assert_eq!(
        to_json_lines(&rows[2..3]),
        "{\"agent\":\"ExampleBot\",\"amount\":\"3\",\"amount_minor\":3,\"bytes\":null,\"currency\":\"JPY\",\"dialect\":\"crawler-price\",\"instance\":\"edge-1\",\"path\":\"/page/2\",\"request_id\":\"0a1b2c3d-2\",\"settlement\":\"0xabc\",\"status\":200,\"subject\":\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\",\"time\":\"2025-11-25T18:04:07.120Z\",\"void\":null}\n"
    );
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
    let void = Record { status: 502, void: Some("decode: invalid gzip header".into()), ..record(1, "ExampleBot") };
    ledger.record(void).await.unwrap();
    let reader = Reader::open(&path).unwrap();
    assert_eq!(
        summary_table(&reader.summary(0).unwrap()),
        "day         agent                     currency   charges          amount\n\
         2025-11-25  ExampleBot                USD              2            0.04\n"
    );
    let rows = reader.export(0).unwrap();
    let voids: Vec<(&str, Option<&str>)> =
        rows.iter().map(|r| (r.request_id.as_str(), r.void.as_deref())).filter(|(_, v)| v.is_some()).collect();
    assert_eq!((rows.len(), voids), (4, vec![("0a1b2c3d-1", Some("decode: invalid gzip header"))]));
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
