//! The demo's embedded sample origin: a tiny HTTP/1.1 server on std
//! threads with a few pages that show what the proxy does (HTML with and
//! without `<head>`, a page that already has a robots meta, a PDF, a large
//! page and a gzip-encoded page).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;

/// One response of the sample origin.
struct Page {
    content_type: &'static str,
    encoding: Option<&'static str>,
    extra: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

fn html(body: &str) -> Page {
    Page { content_type: "text/html; charset=utf-8", encoding: None, extra: vec![], body: body.as_bytes().to_vec() }
}

fn page(path: &str) -> Option<Page> {
    Some(match path {
        "/" | "/index.html" => html(
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Sample origin</title>\n</head>\n<body>\n<h1>Sample origin</h1>\n<ul>\n<li><a href=\"/drafts/post.html\">a draft</a></li>\n<li><a href=\"/nohead.html\">a page without head</a></li>\n<li><a href=\"/private/report.html\">private</a></li>\n</ul>\n</body>\n</html>\n",
        ),
        "/nohead.html" => html("<!doctype html>\n<html>\n<body>\n<p>This page has no head element.</p>\n</body>\n</html>\n"),
        "/drafts/post.html" => html(
            "<!doctype html>\n<html>\n<head>\n<title>Draft</title>\n<meta name=\"robots\" content=\"index, follow\">\n</head>\n<body>\n<p>An unfinished post whose template says index.</p>\n</body>\n</html>\n",
        ),
        "/private/report.html" => html("<!doctype html>\n<html><head><title>Private</title></head><body><p>Internal report.</p></body></html>\n"),
        "/report.pdf" => Page {
            content_type: "application/pdf",
            encoding: None,
            extra: vec![],
            body: b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n".to_vec(),
        },
        "/page20k.html" => {
            let mut s = String::from("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>A 20 KB article</title>\n<link rel=\"stylesheet\" href=\"/site.css\">\n<script src=\"/app.js\" defer></script>\n</head>\n<body>\n<article>\n");
            while s.len() < 20_000 {
                s.push_str("<p>Operators publish robots.txt; crawlers are expected to read it, and <a href=\"/more\">most do</a>.</p>\n");
            }
            s.push_str("</article>\n</body>\n</html>\n");
            html(&s)
        }
        "/large.html" => {
            let mut s = String::from("<!doctype html>\n<html>\n<head><title>Large</title></head>\n<body>\n");
            for i in 0..20_000 {
                s.push_str(&format!("<p>Paragraph {i}: the quick brown fox jumps over the lazy dog.</p>\n"));
            }
            s.push_str("</body>\n</html>\n");
            html(&s)
        }
        "/gzip.html" => {
            let raw = "<!doctype html>\n<html>\n<head><title>Compressed</title></head>\n<body><p>This page is gzip-encoded by the origin.</p></body>\n</html>\n";
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            let _ = enc.write_all(raw.as_bytes());
            Page { content_type: "text/html; charset=utf-8", encoding: Some("gzip"), extra: vec![], body: enc.finish().unwrap_or_default() }
        }
        "/tagged.html" => Page {
            extra: vec![("X-Robots-Tag", "googlebot: nosnippet".into()), ("Robots-Tag", "*;noarchive".into())],
            ..html("<!doctype html>\n<html><head><title>Tagged</title></head><body><p>The origin sends its own robots headers.</p></body></html>\n")
        },
        _ => return None,
    })
}

fn handle(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let target = parts.next().unwrap_or("/").to_owned();
        let mut content_length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    content_length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut discard = vec![0u8; content_length];
        reader.read_exact(&mut discard)?;
        let path = target.split('?').next().unwrap_or("/");
        let (status, page) = match page(path) {
            Some(p) => ("200 OK", p),
            None => (
                "404 Not Found",
                Page {
                    content_type: "text/plain; charset=utf-8",
                    encoding: None,
                    extra: vec![],
                    body: b"not found\n".to_vec(),
                },
            ),
        };
        let mut head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {}\r\nContent-Length: {}\r\nServer: crawlgate-sample-origin\r\n",
            page.content_type,
            page.body.len()
        );
        if let Some(enc) = page.encoding {
            head.push_str(&format!("Content-Encoding: {enc}\r\n"));
        }
        for (k, v) in &page.extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        if method != "HEAD" {
            out.write_all(&page.body)?;
        }
        out.flush()?;
    }
}

/// Runs the sample origin in the foreground until the process is killed.
pub fn run_forever(addr: &str) -> anyhow::Result<std::process::ExitCode> {
    start(addr)?;
    eprintln!("crawlgate sample origin on http://{addr}");
    loop {
        thread::park();
    }
}

/// Starts the sample origin on `addr` in background threads.
pub fn start(addr: &str) -> anyhow::Result<std::net::SocketAddr> {
    let listener =
        TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("cannot bind the sample origin to {addr}: {e}"))?;
    let bound = listener.local_addr()?;
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || {
                let _ = handle(stream);
            });
        }
    });
    Ok(bound)
}
