//! A real DNS server on 127.0.0.1 for tests: UDP and TCP (RFC 1035 section
//! 4.2) on one port, answering from a record table the test sets (PTR, A,
//! AAAA with TTLs; anything else is NXDOMAIN or no data with an SOA whose
//! minimum is the negative TTL, RFC 2308), or misbehaving on purpose: never
//! answering, answering with garbage, or with an error code. It counts the
//! queries it receives per name and type so a test can assert caching and
//! coalescing exactly. Messages are decoded and encoded with `hickory-proto`.
//!
//! ```no_run
//! use crawlgate_testkit::dns::DnsServer;
//! let dns = DnsServer::start();
//! dns.add_ptr("192.0.2.10".parse().unwrap(), "crawl-1.googlebot.com", 300);
//! dns.add_addr("crawl-1.googlebot.com", "192.0.2.10".parse().unwrap(), 300);
//! // ... point the resolver at dns.addr() ...
//! assert_eq!(dns.ptr_queries("192.0.2.10".parse().unwrap()), 1);
//! ```

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, PTR, SOA};
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// The record types the server knows, for counting queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryType {
    /// PTR (reverse).
    Ptr,
    /// A (IPv4).
    A,
    /// AAAA (IPv6).
    Aaaa,
    /// Any other type.
    Other,
}

impl From<RecordType> for QueryType {
    fn from(kind: RecordType) -> QueryType {
        match kind {
            RecordType::PTR => QueryType::Ptr,
            RecordType::A => QueryType::A,
            RecordType::AAAA => QueryType::Aaaa,
            _ => QueryType::Other,
        }
    }
}

/// How the server treats every query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Answers from the record table.
    Answer,
    /// Receives and counts, never answers.
    Drop,
    /// Answers with this kind of garbage.
    Garbage(Garbage),
}

/// A kind of broken answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Garbage {
    /// Bytes that are no DNS message (pseudo-random, with the query's id).
    RandomBytes,
    /// The right answer cut off in the middle of its records.
    Truncated,
    /// The right answer with another message id.
    WrongId,
}

#[derive(Default)]
struct Table {
    /// (lower-case name without the trailing dot, type) -> records.
    records: HashMap<(String, QueryType), Vec<(RData, u32)>>,
    /// Names that answer with an error code (SERVFAIL, REFUSED...).
    rcodes: HashMap<String, ResponseCode>,
    queries: HashMap<(String, QueryType), usize>,
    mode: Option<Mode>,
    negative_ttl: u32,
    delay: Duration,
}

/// The running server; stopped when dropped.
pub struct DnsServer {
    addr: SocketAddr,
    table: Arc<Mutex<Table>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl DnsServer {
    /// Starts a server on 127.0.0.1, on one free port for UDP and TCP.
    pub fn start() -> DnsServer {
        let table = Arc::new(Mutex::new(Table { negative_ttl: 300, ..Table::default() }));
        let stop = Arc::new(AtomicBool::new(false));
        // Find a port free for both protocols.
        let (udp, tcp) = (0..50)
            .find_map(|_| {
                let udp = UdpSocket::bind("127.0.0.1:0").ok()?;
                let port = udp.local_addr().ok()?.port();
                let tcp = TcpListener::bind(("127.0.0.1", port)).ok()?;
                Some((udp, tcp))
            })
            .unwrap_or_else(|| panic!("no port free for UDP and TCP on 127.0.0.1"));
        let addr = udp.local_addr().unwrap_or_else(|e| panic!("local_addr: {e}"));
        let udp_thread = {
            let (table, stop) = (Arc::clone(&table), Arc::clone(&stop));
            std::thread::spawn(move || serve_udp(udp, table, stop))
        };
        let tcp_thread = {
            let (table, stop) = (Arc::clone(&table), Arc::clone(&stop));
            std::thread::spawn(move || serve_tcp(tcp, table, stop))
        };
        DnsServer { addr, table, stop, threads: vec![udp_thread, tcp_thread] }
    }

    /// The address to point a resolver at (UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Adds a PTR record for `ip` (its in-addr.arpa or ip6.arpa name).
    pub fn add_ptr(&self, ip: IpAddr, target: &str, ttl: u32) {
        let name = key(&Name::from(ip));
        let rdata = RData::PTR(PTR(parse_name(target)));
        self.table().records.entry((name, QueryType::Ptr)).or_default().push((rdata, ttl));
    }

    /// Adds an A or AAAA record (by the address's family) for `name`.
    pub fn add_addr(&self, name: &str, ip: IpAddr, ttl: u32) {
        let (kind, rdata) = match ip {
            IpAddr::V4(v4) => (QueryType::A, RData::A(A(v4))),
            IpAddr::V6(v6) => (QueryType::Aaaa, RData::AAAA(AAAA(v6))),
        };
        self.table().records.entry((key(&parse_name(name)), kind)).or_default().push((rdata, ttl));
    }

    /// Answers every query for `name` (any type) with this error code, e.g.
    /// `ResponseCode::ServFail` or `ResponseCode::Refused`.
    pub fn set_rcode(&self, name: &str, code: ResponseCode) {
        self.table().rcodes.insert(key(&parse_name(name)), code);
    }

    /// Answers every query for the reverse name of `ip` with this error code.
    pub fn set_ptr_rcode(&self, ip: IpAddr, code: ResponseCode) {
        self.table().rcodes.insert(key(&Name::from(ip)), code);
    }

    /// The SOA minimum sent with negative answers (default 300 s).
    pub fn set_negative_ttl(&self, secs: u32) {
        self.table().negative_ttl = secs;
    }

    /// How every query is treated from now on.
    pub fn set_mode(&self, mode: Mode) {
        self.table().mode = Some(mode);
    }

    /// Waits this long before each answer (UDP answers are sent in order).
    pub fn set_delay(&self, delay: Duration) {
        self.table().delay = delay;
    }

    /// Queries received for `name` of `kind`, over UDP and TCP.
    pub fn queries(&self, name: &str, kind: QueryType) -> usize {
        let name = key(&parse_name(name));
        self.table().queries.get(&(name, kind)).copied().unwrap_or(0)
    }

    /// PTR queries received for `ip`.
    pub fn ptr_queries(&self, ip: IpAddr) -> usize {
        let name = key(&Name::from(ip));
        self.table().queries.get(&(name, QueryType::Ptr)).copied().unwrap_or(0)
    }

    /// All queries received.
    pub fn total_queries(&self) -> usize {
        self.table().queries.values().sum()
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        lock(&self.table)
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake both threads from their blocking calls.
        if let Ok(socket) = UdpSocket::bind("127.0.0.1:0") {
            let _ = socket.send_to(b"stop", self.addr);
        }
        let _ = TcpStream::connect(self.addr);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn parse_name(name: &str) -> Name {
    let fqdn = if name.ends_with('.') { name.to_string() } else { format!("{name}.") };
    Name::from_ascii(&fqdn).unwrap_or_else(|e| panic!("bad DNS name {name:?}: {e}"))
}

/// The table's key for a name: lower case, no trailing dot.
fn key(name: &Name) -> String {
    let mut text = name.to_ascii().to_ascii_lowercase();
    if text.len() > 1 && text.ends_with('.') {
        text.pop();
    }
    text
}

fn serve_udp(socket: UdpSocket, table: Arc<Mutex<Table>>, stop: Arc<AtomicBool>) {
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        let Ok((len, peer)) = socket.recv_from(&mut buf) else { continue };
        if stop.load(Ordering::SeqCst) {
            break;
        }
        if let Some(answer) = respond(&buf[..len], &table) {
            let _ = socket.send_to(&answer, peer);
        }
    }
}

fn serve_tcp(listener: TcpListener, table: Arc<Mutex<Table>>, stop: Arc<AtomicBool>) {
    let mut connections = Vec::new();
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let (table, stop) = (Arc::clone(&table), Arc::clone(&stop));
        connections.push(std::thread::spawn(move || serve_tcp_connection(stream, table, stop)));
    }
    for connection in connections {
        let _ = connection.join();
    }
}

fn serve_tcp_connection(mut stream: TcpStream, table: Arc<Mutex<Table>>, stop: Arc<AtomicBool>) {
    // A short read timeout lets the thread notice the stop flag.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    loop {
        let mut len = [0u8; 2];
        match stream.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                continue;
            }
            Err(_) => return,
        }
        let mut message = vec![0u8; usize::from(u16::from_be_bytes(len))];
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        if stream.read_exact(&mut message).is_err() {
            return;
        }
        let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
        if let Some(answer) = respond(&message, &table) {
            let Ok(len) = u16::try_from(answer.len()) else { return };
            if stream.write_all(&len.to_be_bytes()).is_err() || stream.write_all(&answer).is_err() {
                return;
            }
        }
        if stop.load(Ordering::SeqCst) {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// The bytes to send back for one query, or `None` to stay silent.
fn respond(query: &[u8], table: &Mutex<Table>) -> Option<Vec<u8>> {
    let request = Message::from_vec(query).ok()?;
    let question = request.queries.first()?.clone();
    let name = key(question.name());
    let kind = QueryType::from(question.query_type());
    let (mode, delay, answer) = {
        let mut table = lock(table);
        *table.queries.entry((name.clone(), kind)).or_insert(0) += 1;
        (table.mode.unwrap_or(Mode::Answer), table.delay, answer(&request, &name, kind, &table))
    };
    if !delay.is_zero() {
        std::thread::sleep(delay);
    }
    let bytes = answer.to_vec().ok()?;
    match mode {
        Mode::Answer => Some(bytes),
        Mode::Drop => None,
        Mode::Garbage(Garbage::RandomBytes) => {
            // The query's id, then bytes that decode as nothing sensible.
            let mut state = u32::from(request.metadata.id) | 1;
            let mut out = request.metadata.id.to_be_bytes().to_vec();
            for _ in 0..40 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                out.push(state.to_be_bytes()[0]);
            }
            // A header claiming thousands of records that are not there.
            if let Some(counts) = out.get_mut(4..12) {
                counts.copy_from_slice(&[0xff; 8]);
            }
            Some(out)
        }
        Mode::Garbage(Garbage::Truncated) => {
            let cut = (bytes.len() / 2).max(13).min(bytes.len().saturating_sub(1));
            Some(bytes[..cut].to_vec())
        }
        Mode::Garbage(Garbage::WrongId) => {
            let mut bytes = bytes;
            let id = request.metadata.id.wrapping_add(1).to_be_bytes();
            bytes[..2].copy_from_slice(&id);
            Some(bytes)
        }
    }
}

/// The answer from the table: the records, an error code, or a negative
/// answer (NXDOMAIN when the name has no records at all, else no data) with
/// an SOA in the authority section.
fn answer(request: &Message, name: &str, kind: QueryType, table: &Table) -> Message {
    let mut response = Message::response(request.metadata.id, OpCode::Query);
    response.metadata.message_type = MessageType::Response;
    response.metadata.authoritative = true;
    response.metadata.recursion_desired = request.metadata.recursion_desired;
    response.metadata.recursion_available = true;
    response.add_queries(request.queries.iter().cloned());
    if let Some(code) = table.rcodes.get(name) {
        response.metadata.response_code = *code;
        return response;
    }
    let owner = request.queries.first().map(|q| q.name().clone()).unwrap_or_else(Name::root);
    if let Some(records) = table.records.get(&(name.to_string(), kind)) {
        for (rdata, ttl) in records {
            response.add_answer(Record::from_rdata(owner.clone(), *ttl, rdata.clone()));
        }
        return response;
    }
    let exists = table.records.keys().any(|(other, _)| other == name);
    if !exists {
        response.metadata.response_code = ResponseCode::NXDomain;
    }
    let soa = SOA::new(parse_name("ns.test"), parse_name("hostmaster.test"), 1, 3600, 600, 86_400, table.negative_ttl);
    response.add_authority(Record::from_rdata(parse_name("test"), table.negative_ttl, RData::SOA(soa)));
    response
}
