//! The process family: CPU, memory, open files and start time, read from /proc.

use super::*;

/// The standard `process_*` metrics (Prometheus client guidelines,
/// "Process metrics"), read from `/proc/self` on each scrape.
pub(super) struct ProcessMetrics {
    pub(super) cpu: prometheus::Counter,
    pub(super) rss: IntGauge,
    pub(super) fds: IntGauge,
    pub(super) max_fds: IntGauge,
    pub(super) start: prometheus::Gauge,
}

/// Clock ticks per second of the times in `/proc/<pid>/stat` (`USER_HZ`,
/// which Linux fixes at 100 for user space on every architecture).
const USER_HZ: f64 = 100.0;

impl ProcessMetrics {
    pub(super) fn new(r: &Registry) -> prometheus::Result<ProcessMetrics> {
        let cpu =
            prometheus::Counter::new("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.")?;
        r.register(Box::new(cpu.clone()))?;
        let rss = IntGauge::new("process_resident_memory_bytes", "Resident memory size in bytes.")?;
        r.register(Box::new(rss.clone()))?;
        let fds = IntGauge::new("process_open_fds", "Number of open file descriptors.")?;
        r.register(Box::new(fds.clone()))?;
        let max_fds = IntGauge::new("process_max_fds", "Maximum number of open file descriptors.")?;
        r.register(Box::new(max_fds.clone()))?;
        let start = prometheus::Gauge::new(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
        )?;
        r.register(Box::new(start.clone()))?;
        let m = ProcessMetrics { cpu, rss, fds, max_fds, start };
        if let Some(started) = process_start_time() {
            m.start.set(started);
        }
        Ok(m)
    }

    /// Reads the current values; a value that cannot be read keeps its last one.
    pub(super) fn update(&self) {
        if let Some((utime, stime)) = proc_stat_field(13).zip(proc_stat_field(14)) {
            let total = (utime + stime) / USER_HZ;
            let delta = total - self.cpu.get();
            if delta > 0.0 {
                self.cpu.inc_by(delta);
            }
        }
        if let Some(kb) = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<i64>().ok())
        }) {
            self.rss.set(kb.saturating_mul(1024));
        }
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            self.fds.set(i64::try_from(dir.count()).unwrap_or(i64::MAX));
        }
        if let Ok((soft, _)) = rlimit::Resource::NOFILE.get() {
            self.max_fds.set(i64::try_from(soft).unwrap_or(i64::MAX));
        }
    }
}

/// Field `index` (0-based, counting the fields after the command name as
/// starting at 2) of `/proc/self/stat`, as a number (proc(5)).
pub(super) fn proc_stat_field(index: usize) -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(index - 2)?.parse().ok()
}

/// The process's start time in Unix seconds: boot time (`btime` in
/// `/proc/stat`) plus the start time in `/proc/self/stat`.
pub(super) fn process_start_time() -> Option<f64> {
    let btime: f64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())?;
    Some(btime + proc_stat_field(21)? / USER_HZ)
}
