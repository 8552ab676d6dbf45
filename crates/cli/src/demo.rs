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
    /// Demo policy file (default: conf/demo.toml if present, else the built-in copy).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// `crawlgate demo`.
pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let path = args.config.or_else(|| {
        let p = PathBuf::from("conf/demo.toml");
        p.exists().then_some(p)
    });
    let (source, name) = match &path {
        Some(p) => (crate::config::read_policy_file(p)?, p.display().to_string()),
        None => (DEMO_POLICY.to_string(), "conf/demo.toml (built in)".to_string()),
    };
    let loaded = match crawlgate_policy::load(&source, &name) {
        Ok(l) => l,
        Err(errors) => {
            eprintln!("{errors}");
            return Ok(ExitCode::from(1));
        }
    };
    let settings = loaded.policy.settings();
    let origin = settings.upstream.servers.first().cloned().unwrap_or_else(|| "127.0.0.1:8081".into());
    let proxy = settings.server.listen.first().cloned().unwrap_or_else(|| "127.0.0.1:8080".into());
    let admin = settings.server.admin.clone().unwrap_or_else(|| "127.0.0.1:9090".into());
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
         \x20 crawlgate explain --config conf/demo.toml -A GPTBot/1.2 /drafts/post.html\n\
         \x20 curl http://{admin}/metrics ; curl http://{admin}/status\n\n\
         Ctrl-C stops it.\n",
        if path.is_some() { " (edit it: changes are live)" } else { "" }
    );
    crawlgate_proxy::run(loaded, &name, path)?;
    Ok(ExitCode::SUCCESS)
}
