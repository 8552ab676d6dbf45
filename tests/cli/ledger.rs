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

/// A policy charging ExampleBot (group price line 11, `/archive/` price
/// line 15), `/press/` free, and `[payment]` ending with `payment`.
fn charging(payment: &str) -> String {
    format!(
        "[server]\nhosts = [\"www.example.com\"]\n\n[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\ndisallow = [\"/account/\"]\nenforce = \"charge\"\n\
         price = \"USD 0.01\"\n\n[[group.prices]]\npath = \"/archive/\"\nprice = \"USD 0.05\"\n\n\
         [verification]\nstate_dir = \"/tmp\"\n\n[[verification.keys]]\ntoken = \"ExampleBot\"\n\
         jwk = '{{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}}'\n\n\
         [payment]\nfree = [\"/press/\"]\n{payment}\n"
    )
}

/// `explain` shows the money of a charge group (issue 34): per path the
/// price and the line it is written on, the dialects that can take it,
/// and what an unsigned request and a signed one naming no price get; a
/// free path says so and a disallowed one is a block, not a charge.
#[test]
fn explain_shows_the_price_its_line_and_the_refusals() {
    let dir = TempDir::new("cli-explain-charge");
    let p = dir.write("p.toml", charging(""));
    let out =
        crawlgate(&["explain", "-c", arg(&p), "-A", "ExampleBot/1.0", "/archive/2024", "/a", "/press/x", "/account/"]);
    let text = stdout(&out).replace(&dir.path().display().to_string(), "DIR");
    assert_eq!(code(&out), 0, "{text}");
    let want = "\
/archive/2024: allowed (no rule matched) -> charge
  price:    USD 0.05 (DIR/p.toml:15: [[group.prices]] path = \"/archive/\")
  dialects: crawler-price
  unsigned: 400 Bad Request (crawler-error: StrongAuthRequired)
  no price: 402 Payment Required with crawler-price: USD 0.05 (signed, without crawler-exact-price or crawler-max-price)
/a: allowed (no rule matched) -> charge
  price:    USD 0.01 (DIR/p.toml:11: group.price of group `ExampleBot`)
  dialects: crawler-price
  unsigned: 400 Bad Request (crawler-error: StrongAuthRequired)
  no price: 402 Payment Required with crawler-price: USD 0.01 (signed, without crawler-exact-price or crawler-max-price)
/press/x: allowed (no rule matched) -> pass
  price:    none (a free path: never charged)
/account/: disallowed (Disallow: /account/ at line 9) -> block (403)
  reason:   robots
";
    let urls = text.split_once("\n\n").map_or("", |(_, u)| u);
    assert_eq!(urls, want, "{text}");

    // With x402 offered in the price's currency, an unsigned request is
    // asked for an x402 payment instead of refused.
    let x402 = "dialects = [\"crawler-price\", \"x402\"]\n\n[payment.x402]\n\
                facilitator = \"https://x402.example.com/facilitator\"\n\
                pay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\nnetwork = \"eip155:8453\"\n\
                asset = \"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913\"\ndecimals = 6";
    let p = dir.write("x.toml", charging(x402));
    let out = crawlgate(&["explain", "-c", arg(&p), "-A", "ExampleBot/1.0", "/a"]);
    let text = stdout(&out).replace(&dir.path().display().to_string(), "DIR");
    assert_eq!(code(&out), 0, "{text}");
    let want = "\
/a: allowed (no rule matched) -> charge
  price:    USD 0.01 (DIR/x.toml:11: group.price of group `ExampleBot`)
  dialects: crawler-price, x402
  unsigned: 402 Payment Required with PAYMENT-REQUIRED (x402: PAYMENT-SIGNATURE header is required)
  no price: 402 Payment Required with crawler-price: USD 0.01 (signed, without crawler-exact-price or crawler-max-price)
";
    assert_eq!(text.split_once("\n\n").map_or("", |(_, u)| u), want, "{text}");
}
