//! The writer thread of a ledger, whatever its backend: it takes charges,
//! byte counts and voids from the queue and hands them to its [`Sink`] in
//! batches, one transaction each, answering every waiting charge with the
//! outcome of its commit.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::{LedgerError, Record, State, TICK};

/// Most records committed in one transaction.
pub(crate) const MAX_BATCH: usize = 512;

/// Under load, how long the writer waits for more charges to share a
/// commit (its fsync) with the first one waiting: measured with
/// `bench/charge-compare`, 1 ms cut the writer's CPU per charge by a
/// third; 4 ms cost throughput (docs/performance.md).
const GROUP_WINDOW: Duration = Duration::from_millis(1);

/// How long byte counts wait for charges to commit with before they are
/// committed alone.
pub(crate) const BYTES_DELAY: Duration = Duration::from_secs(1);

/// Where a charge waits for its commit (or why it was not recorded).
pub(crate) type Done = oneshot::Sender<Result<(), LedgerError>>;

pub(crate) enum Msg {
    Insert(Box<Record>, Done),
    Bytes(String, u64),
    Void(Box<Void>),
    /// Commit what is waiting now, byte counts included, then answer.
    Flush(oneshot::Sender<()>),
}

/// A void row to write: it copies the charge `charge_id`, with the status
/// and bytes the failed response had, and the reason.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Void {
    pub charge_id: String,
    pub time_ms: i64,
    pub status: u16,
    pub bytes: u64,
    pub reason: String,
}

/// What the writer has taken from the queue and not committed yet.
#[derive(Default)]
pub(crate) struct Batch {
    /// Charges, each with its waiting request.
    pub inserts: Vec<(Box<Record>, Done)>,
    /// Body byte counts of charges already committed.
    pub bytes: Vec<(String, u64)>,
    /// Void rows.
    pub voids: Vec<Void>,
    /// Flushes answered once this batch is committed.
    pub flushes: Vec<oneshot::Sender<()>>,
}

impl Batch {
    fn take(&mut self, m: Msg) {
        match m {
            Msg::Insert(r, done) => self.inserts.push((r, done)),
            Msg::Bytes(id, n) => self.bytes.push((id, n)),
            Msg::Void(v) => self.voids.push(*v),
            Msg::Flush(done) => self.flushes.push(done),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.inserts.len() + self.bytes.len() + self.voids.len()
    }
}

/// A backend: writes one batch as one transaction.
pub(crate) trait Sink {
    /// Writes `batch` (charges, byte counts, voids) in one transaction;
    /// an error means none of its charges is recorded.
    async fn write(&mut self, batch: &Batch) -> Result<(), LedgerError>;

    /// Called at least every [`TICK`], idle or not: health checks, and
    /// for PostgreSQL the spool's drain. An error means charges cannot be
    /// taken now (the file removed or replaced).
    async fn tick(&mut self) -> Result<(), LedgerError>;
}

/// Starts the writer thread of `sink`.
pub(crate) fn start<S: Sink + Send + 'static>(
    sink: S,
    rx: mpsc::Receiver<Msg>,
    state: Arc<State>,
    name: String,
) -> Result<(), LedgerError> {
    let writer = Writer { sink, rx, state, name };
    std::thread::Builder::new()
        .name("crawlgate-ledger".into())
        .spawn(move || writer.run())
        .map(|_| ())
        .map_err(|e| LedgerError::Invalid(format!("ledger writer thread: {e}")))
}

struct Writer<S> {
    sink: S,
    rx: mpsc::Receiver<Msg>,
    state: Arc<State>,
    name: String,
}

impl<S: Sink> Writer<S> {
    fn run(mut self) {
        // A runtime of this thread alone, for a receive that can time out
        // and for PostgreSQL's client.
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(ledger = %self.name, error = %e, "The ledger writer could not start; charging stops");
                self.state.set_healthy(false);
                return;
            }
        };
        rt.block_on(self.serve());
    }

    /// Commits what is waiting, as soon as a charge waits: every charge
    /// that queued while the last commit ran goes into the next one, and
    /// under load those that come within [`GROUP_WINDOW`] after. Byte
    /// counts alone do not commit (each would cost an fsync): they ride
    /// with the next charges, or go in [`BYTES_DELAY`] after the oldest of
    /// them came. The sink's tick runs every [`TICK`].
    async fn serve(&mut self) {
        let mut batch = Batch::default();
        // When the oldest byte count waiting is due, whatever came after it.
        let mut bytes_due: Option<tokio::time::Instant> = None;
        // The first tick at once: PostgreSQL's sink connects and migrates.
        let mut tick_due = tokio::time::Instant::now();
        // Charges in the last commit.
        let mut last_inserts = 0;
        loop {
            bytes_due = match bytes_due {
                _ if batch.bytes.is_empty() => None,
                None => Some(tokio::time::Instant::now() + BYTES_DELAY),
                due => due,
            };
            let due = bytes_due.map_or(tick_due, |b| b.min(tick_due));
            let next = match tokio::time::timeout_at(due, self.rx.recv()).await {
                Ok(m) => m,
                Err(_) => {
                    let now = tokio::time::Instant::now();
                    if bytes_due.is_some_and(|b| b <= now) {
                        self.commit(&mut batch).await;
                    }
                    if tick_due <= now {
                        self.tick().await;
                        tick_due = tokio::time::Instant::now() + TICK;
                    }
                    continue;
                }
            };
            let Some(first) = next else { break };
            batch.take(first);
            self.drain(&mut batch);
            if last_inserts >= 2 && !batch.inserts.is_empty() && batch.len() < MAX_BATCH {
                // Under load (the last commit carried several charges)
                // more are on their way: they share this commit's fsync.
                // A lone charge does not wait.
                std::thread::sleep(GROUP_WINDOW);
                self.drain(&mut batch);
            }
            if !batch.inserts.is_empty()
                || !batch.voids.is_empty()
                || batch.len() >= MAX_BATCH
                || !batch.flushes.is_empty()
            {
                last_inserts = batch.inserts.len();
                self.commit(&mut batch).await;
            }
            if tick_due <= tokio::time::Instant::now() {
                self.tick().await;
                tick_due = tokio::time::Instant::now() + TICK;
            }
        }
        if batch.len() > 0 || !batch.flushes.is_empty() {
            self.commit(&mut batch).await;
        }
    }

    /// The sink's tick; a ledger that cannot take charges is unhealthy at
    /// once, not at the next charge.
    async fn tick(&mut self) {
        if let Err(e) = self.sink.tick().await {
            self.state.set_healthy(false);
            self.state.set_error(Some(e.to_string()));
        }
    }

    /// Takes what is queued into `batch`, up to [`MAX_BATCH`].
    fn drain(&mut self, batch: &mut Batch) {
        while batch.len() < MAX_BATCH {
            match self.rx.try_recv() {
                Ok(m) => batch.take(m),
                Err(_) => break,
            }
        }
    }

    /// Writes `batch` in one transaction (none when only flushes wait),
    /// answers every waiting charge with the outcome of its commit, then
    /// the flushes.
    async fn commit(&mut self, batch: &mut Batch) {
        if batch.len() > 0 {
            let result = self.sink.write(batch).await;
            self.state.set_healthy(result.is_ok());
            match &result {
                // PostgreSQL's sink keeps its own error while it is down
                // (a commit in the spool succeeds meanwhile).
                Ok(()) if self.state.postgres_up.load(std::sync::atomic::Ordering::Relaxed) != 0 => {
                    self.state.set_error(None)
                }
                Ok(()) => {}
                Err(e) => {
                    tracing::error!(ledger = %self.name, error = %e, "The ledger could not commit; charging stops until it can");
                    self.state.set_error(Some(e.to_string()));
                }
            }
            batch.bytes.clear();
            batch.voids.clear();
            for (_, done) in batch.inserts.drain(..) {
                let answer = match &result {
                    Ok(()) => Ok(()),
                    Err(LedgerError::Unavailable(why)) => Err(LedgerError::Unavailable(why.clone())),
                    Err(e) => Err(LedgerError::Failed(e.to_string())),
                };
                let _ = done.send(answer);
            }
        }
        for done in batch.flushes.drain(..) {
            let _ = done.send(());
        }
    }
}
