//! `crawlgate demo`: the proxy in front of an embedded sample origin, with
//! `conf/demo.toml` (read from disk and hot-reloaded when run from the
//! repository, else the copy built into the binary).

use std::path::PathBuf;
use std::process::ExitCode;

/// The demo policy built into the binary.
const DEMO_POLICY: &str = include_str!("../../../conf/demo.toml");

/// Options of `crawlgate demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Your policy file: the demo runs it with its upstream replaced by the sample origin (default:
    /// conf/demo.toml if present, hot-reloaded, else the built-in copy).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// `crawlgate demo`: with `--config`, the operator's policy in front of the
/// sample origin on a free loopback port (the policy's upstream replaced,
/// the file not watched, since a reload would bring the real upstream
/// back); without, the demo policy with the sample origin at its upstream.
pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let own = args.config.is_some();
    let path = args.config.or_else(|| {
        let p = PathBuf::from("conf/demo.toml");
        p.exists().then_some(p)
    });
    let (source, name) = match &path {
        Some(p) => (crate::config::read_policy_file(p)?, p.display().to_string()),
        None => (DEMO_POLICY.to_string(), "conf/demo.toml (built in)".to_string()),
    };
    let mut loaded = match crawlgate_policy::load(&source, &name) {
        Ok(l) => l,
        Err(errors) => {
            eprintln!("{errors}");
            return Ok(ExitCode::from(1));
        }
    };
    let settings = loaded.policy.settings();
    let configured = settings.upstream.servers.join(", ");
    let proxy = settings.server.listen.first().cloned().unwrap_or_else(|| "127.0.0.1:8080".into());
    let admin = settings.server.admin.clone();
    let admin_line = admin.as_deref().map(|a| format!(", admin http://{a}")).unwrap_or_default();
    let exe = this_binary();
    let dashboard =
        admin.as_deref().map(|a| format!("Dashboard: http://{a}/ (open it in a browser)\n")).unwrap_or_default();
    if own {
        let origin = crate::sample_origin::start("127.0.0.1:0")?;
        loaded.policy.replace_upstream(origin.to_string());
        outln!(
            "crawlgate demo: proxy http://{proxy} -> sample origin http://{origin}{admin_line}\n\
             policy: {name} (its upstream {configured} is replaced by the sample origin; the file is not watched: \
             restart to apply edits)\n\n\
             Try:\n\
             \x20 curl -i http://{proxy}/robots.txt\n\
             \x20 curl -i -A 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)' http://{proxy}/\n\
             \x20 {exe} explain --config {name} -A GPTBot/1.2 /\n\n\
             {dashboard}\
             Ctrl-C stops it.\n"
        );
        crawlgate_proxy::run(loaded, &name, None)?;
        return Ok(ExitCode::SUCCESS);
    }
    let origin = settings.upstream.servers.first().cloned().unwrap_or_else(|| "127.0.0.1:8081".into());
    let admin = admin.unwrap_or_else(|| "127.0.0.1:9090".into());
    let config = path.as_ref().map_or_else(|| "conf/demo.toml".to_string(), |p| p.display().to_string());
    crate::sample_origin::start(&origin)?;
    outln!(
        "crawlgate demo: proxy http://{proxy} -> sample origin http://{origin}, admin http://{admin}\n\
         policy: {name}{}\n\n\
         Try:\n\
         \x20 curl -i http://{proxy}/robots.txt\n\
         \x20 curl -i http://{proxy}/agents.txt\n\
         \x20 curl -i -A 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)' http://{proxy}/        # blocked\n\
         \x20 curl -i http://{proxy}/drafts/post.html                  # Robots-Tag header, meta rewritten\n\
         \x20 curl -i http://{proxy}/nohead.html                       # meta injected without a <head>\n\
         \x20 curl -i --compressed http://{proxy}/gzip.html            # gzip origin, rewritten, recompressed\n\
         \x20 curl -i -A 'ExampleBot/1.0' http://{proxy}/private/report.html   # violation logged\n\
         \x20 {exe} explain --config {config} -A GPTBot/1.2 /drafts/post.html\n\
         \x20 curl http://{admin}/metrics ; curl http://{admin}/status\n\n\
         Dashboard: http://{admin}/ (open it in a browser)\n\
         Ctrl-C stops it.\n",
        if path.is_some() { " (edit it: changes are live)" } else { "" }
    );
    crawlgate_proxy::run(loaded, &name, path)?;
    Ok(ExitCode::SUCCESS)
}

/// How to run this binary from the current directory, for the commands the
/// demo prints: `cargo run` leaves no `crawlgate` on `PATH`, so a bare
/// `crawlgate explain` would not work (`target/release/crawlgate` does).
fn this_binary() -> String {
    let Ok(exe) = std::env::current_exe() else { return "crawlgate".to_string() };
    let relative = std::env::current_dir().ok().and_then(|cwd| exe.strip_prefix(cwd).ok().map(|p| p.to_path_buf()));
    relative.unwrap_or(exe).display().to_string()
}
