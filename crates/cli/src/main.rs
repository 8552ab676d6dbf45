//! The `crawlgate` binary: argument parsing and dispatch.
//!
//! Each subcommand lives in the module named after it (`robots_test`,
//! `import`, `agents`, `agents_txt`, `top`; `offline` for check, render
//! and explain; `run`, `demo`, `sample_origin`); this file only declares the
//! command line (the contract other tools script against) and dispatches.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc's allocator: a proxied request makes a few dozen
/// short-lived allocations (Pingora's per-request futures and buffers, header
/// maps), many of them over glibc's 1 KiB per-thread cache. See
/// docs/performance.md for what it changes.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` for command output: a reader that closes the pipe early
/// (`crawlgate explain ... | head`) ends the command quietly instead of
/// panicking, as it would with `println!`.
macro_rules! outln {
    () => {
        $crate::write_stdout(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!($($arg)*), true)
    };
}

/// `print!` for command output, with [`outln!`]'s handling of a closed pipe.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!($($arg)*), false)
    };
}

mod agents;
mod agents_txt;
mod config;
mod demo;
mod explain_money;
mod import;
mod ledger;
mod offline;
mod origin;
mod robots_file;
mod robots_test;
mod run;
mod sample_origin;
mod top;
mod verify;

/// crawlgate: a reverse proxy that tells crawlers and AI agents what they may fetch.
#[derive(Debug, Parser)]
#[command(
    name = "crawlgate",
    version,
    about,
    after_help = "Exit status: 0 success, 1 a negative answer (an invalid policy, a disallowed URL, an invalid \
agents.txt, an import that would decide differently), 2 an error (a file that cannot be read, wrong arguments). \
Each command's --help gives its own."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the policy file comes from: `--config`, else `$CRAWLGATE_CONFIG`,
/// else `/etc/crawlgate/crawlgate.toml`.
#[derive(Debug, clap::Args)]
pub struct ConfigArg {
    /// Policy file (TOML).
    #[arg(long, short = 'c', env = "CRAWLGATE_CONFIG", default_value = "/etc/crawlgate/crawlgate.toml")]
    pub config: PathBuf,
}

/// The origin's robots.txt to merge, as the proxy does under
/// `origin = "merge"`.
#[derive(Debug, clap::Args)]
pub struct OriginArgs {
    /// Fetch this origin's robots.txt (`https://example.com` or its
    /// `/robots.txt` URL) and merge it as the proxy does.
    #[arg(long, value_name = "URL", conflicts_with = "origin_file")]
    pub origin: Option<String>,
    /// Merge this file as the origin's robots.txt, as the proxy does.
    #[arg(long, value_name = "PATH")]
    pub origin_file: Option<PathBuf>,
}

impl OriginArgs {
    /// The source given, if any.
    fn source(&self) -> Option<origin::OriginSource<'_>> {
        match (&self.origin, &self.origin_file) {
            (Some(url), _) => Some(origin::OriginSource::Url(url)),
            (None, Some(path)) => Some(origin::OriginSource::File(path)),
            (None, None) => None,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate a policy: exit 0 with a summary and its warnings, or 1 with every error (both on stdout).
    #[command(
        after_help = "Exit status: 0 the policy is valid (warnings or not), 1 it has errors (each on stdout as \
FILE:LINE:COL: message, or in the JSON), 2 the file cannot be read or the arguments are wrong."
    )]
    Check {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the diagnostics as JSON: {"file", "errors", "warnings", "acknowledged"}, each diagnostic
        /// {"line", "col", "id", "message"} (`id`: the warning's id for allow_warnings, null for an error);
        /// an unreadable file too (one error at line 0, exit 2).
        #[arg(long)]
        json: bool,
        /// Also fetch this origin's robots.txt and list what merging it keeps and its conflicts.
        #[arg(long, value_name = "URL")]
        origin: Option<String>,
    },
    /// Print the exact bytes the proxy serves at /robots.txt, /agents.txt
    /// or /.well-known/tdmrep.json (with `origin = "merge"`, pass --origin
    /// or --origin-file to include the origin's groups).
    #[command(after_help = "Exit status: 0 printed, 1 the policy has errors (on stdout) or agents.txt is disabled, \
2 the file cannot be read or the arguments are wrong.")]
    Render {
        /// `robots.txt`, `agents.txt` or `tdmrep.json`.
        #[arg(value_parser = ["robots.txt", "agents.txt", "tdmrep.json"])]
        what: String,
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        origin: OriginArgs,
    },
    /// Show how the policy treats a User-Agent on one or more URLs.
    #[command(after_help = "Exit status: 0 explained (whatever the decision: read `action`), 1 the policy has \
errors (on stdout), 2 the file cannot be read, a URL is not a valid request target, or the arguments are wrong.")]
    Explain {
        #[command(flatten)]
        config: ConfigArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// The full User-Agent header to identify.
        #[arg(long = "user-agent", short = 'A')]
        user_agent: String,
        /// URLs or paths (`/a?b`, `https://example.com/a?b`).
        #[arg(required = true)]
        urls: Vec<String>,
        /// The client address: verify the claimed token from it, or a
        /// catalog crawler the policy does not name as the proxy does
        /// (`observe_catalog`; shown, never decided on); offline, from the
        /// lists in the state directory.
        #[arg(long = "client-ip")]
        client_ip: Option<String>,
        /// With --client-ip: fetch missing lists and ask the resolver.
        #[arg(long, requires = "client_ip")]
        live: bool,
        #[command(flatten)]
        origin: OriginArgs,
    },
    /// Verify a claimed crawler identity from an address, live: IP lists
    /// (from the state directory, else fetched) and reverse DNS.
    #[command(name = "verify")]
    VerifyIp {
        #[command(flatten)]
        config: ConfigArg,
        /// The client address.
        ip: String,
        /// The full User-Agent header (default: every verified token).
        #[arg(long = "user-agent", short = 'A')]
        user_agent: Option<String>,
    },
    /// Evaluate any robots.txt file the way RFC 9309 says: prints allowed or disallowed.
    #[command(after_help = "--as google reproduces Google's documented matcher, each behaviour departing from \
RFC 9309:
  - user-agent values and the crawler name cut at the first character outside [A-Za-z_-] (Googlebot/2.1 is \
Googlebot, MJ12bot is MJ; RFC 9309 section 2.2.1 compares the whole product token);
  - typo keys (Disalow, Dissallow, useragent, user agent), key suffixes (User-agents), `;` or no colon read as the \
key (RFC 9309 section 2.2 grammar requires the key and a colon);
  - /robots.txt decided like any path (RFC 9309 section 2.3.1.2 allows it always);
  - Allow: /d/index.html also allows /d/ (no such rule in RFC 9309 section 2.2.2);
  - lines cut at 16,664 bytes (RFC 9309 section 2.5 sets only the 500 KiB floor);
  - percent-escapes of unreserved characters not decoded, in rules or the URL: /%6Cogin is not /login (RFC 9309 \
section 2.2.2 decodes them; enforcement in the proxy always does, or an escape would bypass a rule).
When the two readings differ, a second line says so: `RFC 9309: allowed; Google: disallowed, \
because ...`; the verdict and exit status are Google's.

Exit status: 0 allowed, 1 disallowed, 2 the file cannot be read or the arguments are wrong.")]
    RobotsTest {
        /// The robots.txt file (with --batch: the file for questions that
        /// name none).
        #[arg(required_unless_present = "batch")]
        robots_file: Option<PathBuf>,
        /// The crawler's product token (or a full User-Agent).
        #[arg(required_unless_present = "batch")]
        user_agent: Option<String>,
        /// The URL or path to check.
        #[arg(required_unless_present = "batch")]
        url: Option<String>,
        /// Questions on stdin, one a line: TSV `[FILE<TAB>]USER_AGENT<TAB>URL`
        /// or JSON `{"file", "user_agent", "url"}`; answers on stdout, the
        /// question with `allowed`/`disallowed` (TSV) or `"allowed": bool`
        /// (JSON) added.
        #[arg(long, conflicts_with_all = ["user_agent", "url"])]
        batch: bool,
        /// Whose reading: `rfc` (RFC 9309, the default) or `google`
        /// (Google's open-source parser; see below).
        #[arg(long = "as", value_name = "READER", default_value = "rfc", value_parser = ["rfc", "google"])]
        reader: String,
    },
    /// agents.txt tools.
    #[command(name = "agents-txt", subcommand)]
    AgentsTxt(AgentsTxtCommand),
    /// Print a policy TOML equivalent to an existing robots.txt.
    #[command(after_help = "Exit status: 0 the policy is printed, 1 nothing is printed because the policy would \
decide differently for some crawler or would not pass `crawlgate check` (stderr says why), 2 the file cannot be \
read or the arguments are wrong.")]
    Import {
        /// The robots.txt file to import.
        robots_file: PathBuf,
        /// Print the policy even when it would decide differently for some
        /// crawlers (a repaired typo, a cut user-agent value); they are
        /// listed in a comment on top.
        #[arg(long)]
        force: bool,
        /// The site the file is from (`https://www.example.com`): a relative
        /// `Sitemap` value is resolved against it, as the site meant, and
        /// reported. Without it such a value is kept as a comment.
        #[arg(long, value_name = "URL")]
        base: Option<String>,
    },
    /// The built-in catalog of known crawlers and agents.
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// Read the ledger of charges (what to bill), or migrate its PostgreSQL schema.
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// Run the proxy.
    #[command(after_help = "Exit status: 0 after a clean shutdown (SIGTERM, SIGINT), 1 the policy has errors (on \
stderr) and the proxy does not start, 2 the file cannot be read, the proxy cannot start, or the arguments are \
wrong.")]
    Run(ConfigArg),
    /// Run the proxy in front of an embedded sample origin, with conf/demo.toml or your policy.
    #[command(after_help = "Exit status: as `run`: 0 after a clean shutdown, 1 the policy has errors, 2 the file \
cannot be read, the proxy or the sample origin cannot start, or the arguments are wrong.")]
    Demo(demo::DemoArgs),
    /// Show the per-agent activity table of a running proxy, refreshing like top.
    #[command(after_help = "Without ADDRESS or --admin, the admin listener is server.admin of the policy file \
(--config, $CRAWLGATE_CONFIG, else /etc/crawlgate/crawlgate.toml), and its server.admin_auth_file gives the \
credentials unless --token-file is set. REQ/S is measured between two refreshes (--once waits one --interval). \
No line is wider than $COLUMNS (when at least 40, else 100): long agent names are cut, then large counts \
abbreviated (12.3M).")]
    Top {
        /// The admin listener: host:port or http://host:port[/prefix].
        #[arg(value_name = "ADDRESS", conflicts_with = "admin")]
        address: Option<String>,
        /// The admin listener (the same as ADDRESS).
        #[arg(long)]
        admin: Option<String>,
        /// Policy file whose server.admin (and server.admin_auth_file) to use without an address.
        #[arg(long, short = 'c', env = "CRAWLGATE_CONFIG", default_value = "/etc/crawlgate/crawlgate.toml")]
        config: PathBuf,
        /// File holding the admin credentials (server.admin_auth_file's secret).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// Seconds between refreshes.
        #[arg(long, default_value_t = 2.0)]
        interval: f64,
        /// Print the table once and exit.
        #[arg(long)]
        once: bool,
    },
    /// Run only the demo's sample origin (for load tests and experiments).
    #[command(name = "sample-origin", hide = true)]
    SampleOrigin {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8081")]
        listen: String,
    },
}

#[derive(Debug, Subcommand)]
enum AgentsTxtCommand {
    /// Verify an agents.txt file strictly (hash line and every directive).
    #[command(after_help = "Exit status: 0 valid, 1 invalid (stdout names the line), 2 the file cannot be read or \
the arguments are wrong.")]
    Verify {
        /// The agents.txt file.
        file: PathBuf,
    },
}

/// Where `ledger export|summary` read: files, a URL, else the policy.
#[derive(Debug, clap::Args)]
pub struct LedgerSource {
    #[command(flatten)]
    config: ConfigArg,
    /// A ledger to read: an SQLite file, or a postgres:// URL (its password
    /// from the URL, --password-file or PGPASSWORD). Repeat it to read
    /// several instances' files as one ledger. Default: the policy's
    /// payment.ledger.
    #[arg(long = "file", visible_alias = "ledger", value_name = "FILE|URL")]
    files: Vec<String>,
    /// A file whose first line is the PostgreSQL password (default: the
    /// policy's payment.ledger_password_file, when the ledger comes from the policy).
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// Only rows from then on: YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ (UTC) or Unix seconds.
    #[arg(long)]
    since: Option<String>,
    /// Only rows before then (excluded), in the same forms: `--until
    /// 2026-12-01` ends with November.
    #[arg(long)]
    until: Option<String>,
}

#[derive(Debug, Subcommand)]
enum LedgerCommand {
    /// Print every charge and void row, oldest first, streamed: CSV with a
    /// header line, or JSON (one object per line). Fields a spreadsheet
    /// would run as a formula are neutralised with a leading `'`.
    #[command(after_help = "Exit status: 0 printed, 2 the ledger cannot be read or the arguments are wrong.")]
    Export {
        #[command(flatten)]
        source: LedgerSource,
        /// `csv` or `json`.
        #[arg(long, default_value = "csv", value_parser = ["csv", "json"])]
        format: String,
    },
    /// Print charges and amounts, net of voids, per currency and the
    /// --group-by columns.
    #[command(after_help = "Exit status: 0 printed, 2 the ledger cannot be read or the arguments are wrong.")]
    Summary {
        #[command(flatten)]
        source: LedgerSource,
        /// Columns to group by, comma-separated: host, agent, payer, day, month.
        #[arg(long, default_value = "day,agent")]
        group_by: String,
        /// `table`, `csv` or `json`.
        #[arg(long, default_value = "table", value_parser = ["table", "csv", "json"])]
        format: String,
    },
    /// Create or migrate the PostgreSQL ledger's schema (the proxy also does
    /// at start), and print its version.
    #[command(after_help = "Exit status: 0 migrated or current, 2 the database cannot be reached or is newer \
than this crawlgate.")]
    Migrate {
        #[command(flatten)]
        config: ConfigArg,
        /// The postgres:// URL (default: the policy's payment.ledger).
        #[arg(long = "ledger", value_name = "URL")]
        url: Option<String>,
        /// A file whose first line is the password.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// List catalog entries.
    #[command(after_help = "Exit status: 0 listed, 2 an unknown category or wrong arguments.")]
    List {
        /// Only entries of this category.
        #[arg(long)]
        category: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { config, json, origin } => offline::check(&config.config, json, origin.as_deref()),
        Command::Render { what, config, origin } => offline::render(&what, &config.config, origin.source()),
        Command::Explain { config, json, user_agent, urls, client_ip, live, origin } => {
            offline::explain(&config.config, json, &user_agent, &urls, client_ip.as_deref(), live, origin.source())
        }
        Command::VerifyIp { config, ip, user_agent } => verify::verify(&config.config, &ip, user_agent.as_deref()),
        Command::RobotsTest { robots_file, user_agent, url, batch, reader } => match (robots_file, user_agent, url) {
            (file, None, None) if batch => robots_test::batch(file.as_deref(), reader == "google"),
            (Some(file), Some(ua), Some(url)) => robots_test::robots_test(&file, &ua, &url, reader == "google"),
            _ => Err(anyhow::anyhow!("robots-test needs ROBOTS_FILE USER_AGENT URL, or --batch [ROBOTS_FILE]")),
        },
        Command::AgentsTxt(AgentsTxtCommand::Verify { file }) => agents_txt::verify(&file),
        Command::Import { robots_file, force, base } => import::import(&robots_file, force, base.as_deref()),
        Command::Agents(AgentsCommand::List { category, json }) => agents::list(category.as_deref(), json),
        Command::Ledger(LedgerCommand::Export { source, format }) => ledger::export(&source, &format),
        Command::Ledger(LedgerCommand::Summary { source, group_by, format }) => {
            ledger::summary(&source, &group_by, &format)
        }
        Command::Ledger(LedgerCommand::Migrate { config, url, password_file }) => {
            ledger::migrate(&config.config, url.as_deref(), password_file.as_deref())
        }
        Command::Run(c) => run::run(&c.config),
        Command::Demo(args) => demo::demo(args),
        Command::Top { address, admin, config, token_file, interval, once } => {
            top::admin_address(address.or(admin).as_deref(), &config).and_then(|(admin, auth_file)| {
                let token_file = token_file.or(auth_file.map(PathBuf::from));
                top::top(&admin, token_file.as_deref(), interval, once)
            })
        }
        Command::SampleOrigin { listen } => sample_origin::run_forever(&listen),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("crawlgate: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Writes command output to stdout. A closed pipe ends the process with
/// success (the reader has what it wanted); another write error ends it
/// with an error message.
fn write_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| if newline { stdout.write_all(b"\n") } else { Ok(()) });
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("crawlgate: cannot write to stdout: {e}");
            std::process::exit(1);
        }
    }
}
