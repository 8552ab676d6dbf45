//! `crawlgate check` agrees with `run` on the ledger (issue 34): what
//! `run` would refuse at start from `[payment]` alone is an error at the
//! key's FILE:LINE:COL.

use crawlgate_e2e::{arg, code, crawlgate, stdout};
use crawlgate_testkit::TempDir;

/// A charging policy whose `[payment]` table ends with `payment`.
fn policy(payment: &str) -> String {
    format!(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\nenforce = \"charge\"\nprice = \"USD 0.01\"\n\n\
         [verification]\n\n[[verification.keys]]\ntoken = \"ExampleBot\"\n\
         jwk = '{{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}}'\n\n\
         [payment]\n{payment}\n"
    )
}

fn check(dir: &TempDir, payment: &str) -> (i32, String) {
    let p = dir.write("p.toml", policy(payment));
    let out = crawlgate(&["check", "-c", arg(&p)]);
    let text = stdout(&out).replace(&dir.path().display().to_string(), "DIR");
    (code(&out), text)
}

#[test]
fn check_refuses_what_run_would_refuse_at_the_key() {
    let dir = TempDir::new("cli-ledger-check");
    let cases: &[(&str, &str)] = &[
        (
            "ledger = \"/nonexistent-dir/ledger.sqlite\"",
            "DIR/p.toml:19:10: payment.ledger: the directory `/nonexistent-dir` does not exist (create it, writable by the user crawlgate runs as)\n",
        ),
        (
            "ledger = \"postgres://crawlgate@db:99999/ledger\"",
            "DIR/p.toml:19:10: payment.ledger: the PostgreSQL URL the port `99999` is not a number from 1 to 65535\n",
        ),
        (
            "ledger = \"postgres://crawlgate@db/ledger?connect_timeout=soon\"\nledger_spool = \"/nonexistent-dir/spool.sqlite\"\nledger_password_file = \"/nonexistent-dir/pw\"",
            "DIR/p.toml:19:10: payment.ledger: not a PostgreSQL URL: invalid connection string\n\
             DIR/p.toml:20:16: payment.ledger_spool: the directory `/nonexistent-dir` does not exist (create it, writable by the user crawlgate runs as)\n\
             DIR/p.toml:21:24: payment.ledger_password_file: `/nonexistent-dir/pw`: No such file or directory (os error 2)\n",
        ),
    ];
    for (payment, want) in cases {
        assert_eq!(check(&dir, payment), (1, want.to_string()), "{payment}");
    }
    let ledger = format!("ledger = \"{}\"", dir.join("ledger.sqlite").display());
    let (status, out) = check(&dir, &ledger);
    assert_eq!(status, 0, "{out}");
    let pg = format!(
        "ledger = \"postgres://crawlgate:s3cret@db.internal/ledger\"\nledger_spool = \"{}\"",
        dir.join("spool.sqlite").display()
    );
    let (status, out) = check(&dir, &pg);
    assert_eq!(status, 0, "{out}");
}
