//! The machine a figure was measured on, and a process's CPU time and memory, from `/proc`.

use std::time::Duration;

use serde::Serialize;

/// The machine a figure was measured on.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel: String,
    /// CPUs this client process may run on (`taskset` shows here).
    pub client_cpus: usize,
    /// The CPUs the server may run on (`Cpus_allowed_list` of `--server-pid`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<String>,
    /// Whether the server or this client is held to fewer CPUs than the machine has: the
    /// figures were taken pinned (issue 37: measure as users run it, unpinned by default).
    pub pinned: bool,
}

impl Machine {
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let cores = cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0.0);
        Machine {
            cpu_model,
            cores,
            memory_gib: (memory_kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_owned(),
            client_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            server_cpus: None,
            pinned: false,
        }
        .pinning(None)
    }

    /// [`Machine::probe`], with the CPUs the server at `server_pid` may run on.
    pub fn probe_with_server(server_pid: Option<u32>) -> Machine {
        Machine::probe().pinning(server_pid)
    }

    fn pinning(mut self, server_pid: Option<u32>) -> Machine {
        self.server_cpus = server_pid.and_then(cpus_allowed);
        let server_pinned = self
            .server_cpus
            .as_deref()
            .is_some_and(|list| cpu_count(list) < self.cores);
        self.pinned = server_pinned || self.client_cpus < self.cores;
        self
    }

    pub fn line(&self) -> String {
        let server = self
            .server_cpus
            .as_deref()
            .map(|list| format!(", server on CPU(s) {list}"))
            .unwrap_or_default();
        format!(
            "machine: {} ({} cores, {} GiB, Linux {}); client on {} CPU(s){server}; {}",
            self.cpu_model,
            self.cores,
            self.memory_gib,
            self.kernel,
            self.client_cpus,
            if self.pinned { "PINNED" } else { "unpinned" }
        )
    }
}

/// The value of `field` (`VmRSS:`, `Cpus_allowed_list:`) in `/proc/<pid>/status`, trimmed.
fn status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let value = status.lines().find_map(|l| l.strip_prefix(field))?;
    Some(value.trim().to_owned())
}

/// The CPUs a process may run on, as Linux lists them (`0-1`, `1`, `0,2-3`).
fn cpus_allowed(pid: u32) -> Option<String> {
    status_field(pid, "Cpus_allowed_list:")
}

/// How many CPUs a list like `0,2-3` names (0 for what it cannot read).
fn cpu_count(list: &str) -> usize {
    list.split(',')
        .map(|part| match part.trim().split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => usize::from(part.trim().parse::<usize>().is_ok()),
        })
        .sum()
}

/// A process's CPU time so far (user + system), from `/proc/<pid>/stat`.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields count from after its closing parenthesis.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux this runs on.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// A process's resident set size in KiB, from `/proc/<pid>/status`.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_field(pid, "VmRSS:")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_figures_of_this_process() {
        let me = std::process::id();
        assert!(rss_kib(me).is_some_and(|k| k > 0));
        assert!(cpu_time(me).is_some());
        assert!(!Machine::probe().line().is_empty());
        // This process as the "server": its own CPUs are read from /proc.
        let machine = Machine::probe_with_server(Some(me));
        assert!(machine.server_cpus.is_some());
        assert!(machine.line().contains("server on CPU(s)"));
    }

    #[test]
    fn cpu_lists_are_counted_as_linux_writes_them() {
        assert_eq!(cpu_count("0-1"), 2);
        assert_eq!(cpu_count("1"), 1);
        assert_eq!(cpu_count("0,2-3"), 3);
        assert_eq!(cpu_count(""), 0);
        assert_eq!(cpu_count("3-1"), 0);
    }
}
