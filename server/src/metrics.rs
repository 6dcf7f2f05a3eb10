//! Prometheus metrics, kept in atomics and rendered in the text exposition format.
//!
//! Fixed label sets (message kinds, error codes, action types) are enums, so every series is an
//! array slot: recording is one relaxed atomic add on the hot path, with no lock and no map.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use banter_protocol::{ActionType, ErrorCode};

/// The message kinds counted, in wire names; `invalid` counts frames that did not decode.
pub const MESSAGE_KINDS: [&str; 11] = [
    "move",
    "talk",
    "advance",
    "choose",
    "action",
    "close",
    "set_afk",
    "fetch_conversation",
    "cutscene_done",
    "resume",
    "invalid",
];

/// Upper bounds of the handling-latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 14] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25,
];

#[derive(Debug, Default)]
pub struct Metrics {
    open_sessions: AtomicI64,
    sessions_total: AtomicU64,
    sessions_taken_over: AtomicU64,
    auth_failures: AtomicU64,
    http_connections_open: AtomicI64,
    handshakes_refused: AtomicU64,
    handshakes_timed_out: AtomicU64,
    session_starts_refused: AtomicU64,
    messages: [AtomicU64; MESSAGE_KINDS.len()],
    rejections: [AtomicU64; ErrorCode::ALL.len()],
    actions: [AtomicU64; ActionType::ALL.len()],
    conversations_opened: AtomicU64,
    content_reloads: AtomicU64,
    content_reload_failures: AtomicU64,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_ns: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Metrics {
    pub fn session_opened(&self) {
        self.open_sessions.fetch_add(1, Ordering::Relaxed);
        bump(&self.sessions_total);
    }

    /// A newer claim of the player on another instance (or a resync) closed a local session.
    pub fn session_taken_over(&self) {
        bump(&self.sessions_taken_over);
    }

    pub fn session_closed(&self) {
        self.open_sessions.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn open_sessions(&self) -> i64 {
        self.open_sessions.load(Ordering::Relaxed)
    }

    pub fn auth_failed(&self) {
        bump(&self.auth_failures);
    }

    /// A TCP connection was accepted and is being served as HTTP (until it closes or upgrades).
    pub fn http_connection_opened(&self) {
        self.http_connections_open.fetch_add(1, Ordering::Relaxed);
    }

    pub fn http_connection_closed(&self) {
        self.http_connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    /// A connection was closed at accept because too many were still in their handshake.
    pub fn handshake_refused(&self) {
        bump(&self.handshakes_refused);
    }

    /// An upgrade was refused because too many sessions were starting.
    pub fn session_start_refused(&self) {
        bump(&self.session_starts_refused);
    }

    /// A connection was closed because its request head did not arrive in time.
    pub fn handshake_timed_out(&self) {
        bump(&self.handshakes_timed_out);
    }

    pub fn message(&self, kind: &str) {
        let i = MESSAGE_KINDS
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(MESSAGE_KINDS.len() - 1);
        bump(&self.messages[i]);
    }

    pub fn rejected(&self, code: ErrorCode) {
        if let Some(i) = ErrorCode::ALL.iter().position(|c| *c == code) {
            bump(&self.rejections[i]);
        }
    }

    pub fn rejections(&self, code: ErrorCode) -> u64 {
        ErrorCode::ALL
            .iter()
            .position(|c| *c == code)
            .map_or(0, |i| self.rejections[i].load(Ordering::Relaxed))
    }

    pub fn action_run(&self, action: ActionType) {
        if let Some(i) = ActionType::ALL.iter().position(|a| *a == action) {
            bump(&self.actions[i]);
        }
    }

    pub fn conversation_opened(&self) {
        bump(&self.conversations_opened);
    }

    pub fn reloaded(&self, ok: bool) {
        bump(if ok {
            &self.content_reloads
        } else {
            &self.content_reload_failures
        });
    }

    /// Records how long handling one client message took.
    pub fn handled(&self, took: Duration) {
        let secs = took.as_secs_f64();
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            if secs <= bound {
                bump(bucket);
            }
        }
        bump(&self.latency_count);
        self.latency_sum_ns.fetch_add(
            u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// The Prometheus text exposition of every series.
    pub fn render(&self) -> String {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::with_capacity(4096);
        let mut family = |name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        family(
            "banter_open_sessions",
            "gauge",
            "WebSocket sessions open now.",
        );
        family(
            "banter_sessions_total",
            "counter",
            "WebSocket sessions opened since start.",
        );
        family(
            "banter_sessions_taken_over_total",
            "counter",
            "Sessions closed because a newer session of the player claimed it on another instance.",
        );
        family(
            "banter_auth_failures_total",
            "counter",
            "Upgrades refused for a missing or invalid token.",
        );
        family(
            "banter_http_connections_open",
            "gauge",
            "TCP connections served as HTTP now: in their handshake, or a request in flight (upgraded sessions not included).",
        );
        family(
            "banter_handshakes_refused_total",
            "counter",
            "Connections closed at accept because too many were still in their handshake.",
        );
        family(
            "banter_handshakes_timed_out_total",
            "counter",
            "Connections closed because their request head did not arrive in time (slowloris).",
        );
        family(
            "banter_session_starts_refused_total",
            "counter",
            "Upgrades refused (503) because too many sessions were loading and claiming their player.",
        );
        family(
            "banter_messages_total",
            "counter",
            "Client messages received, by type.",
        );
        family(
            "banter_rejections_total",
            "counter",
            "Client messages refused, by error code.",
        );
        family(
            "banter_actions_total",
            "counter",
            "Dialogue actions accepted and run, by action type.",
        );
        family(
            "banter_conversations_opened_total",
            "counter",
            "Conversations opened.",
        );
        family(
            "banter_content_reloads_total",
            "counter",
            "Content reloads, by result.",
        );
        family(
            "banter_message_handling_seconds",
            "histogram",
            "Time to handle one client message, from decode to last reply queued.",
        );
        let _ = writeln!(
            out,
            "banter_open_sessions {}",
            self.open_sessions.load(Ordering::Relaxed)
        );
        let _ = writeln!(out, "banter_sessions_total {}", load(&self.sessions_total));
        let _ = writeln!(
            out,
            "banter_sessions_taken_over_total {}",
            load(&self.sessions_taken_over)
        );
        let _ = writeln!(
            out,
            "banter_auth_failures_total {}",
            load(&self.auth_failures)
        );
        let _ = writeln!(
            out,
            "banter_http_connections_open {}\nbanter_handshakes_refused_total {}\nbanter_handshakes_timed_out_total {}\nbanter_session_starts_refused_total {}",
            self.http_connections_open.load(Ordering::Relaxed),
            load(&self.handshakes_refused),
            load(&self.handshakes_timed_out),
            load(&self.session_starts_refused)
        );
        for (kind, n) in MESSAGE_KINDS.iter().zip(&self.messages) {
            let _ = writeln!(out, "banter_messages_total{{type=\"{kind}\"}} {}", load(n));
        }
        for (code, n) in ErrorCode::ALL.iter().zip(&self.rejections) {
            let _ = writeln!(
                out,
                "banter_rejections_total{{code=\"{}\"}} {}",
                code.name(),
                load(n)
            );
        }
        for (action, n) in ActionType::ALL.iter().zip(&self.actions) {
            let _ = writeln!(
                out,
                "banter_actions_total{{action=\"{action}\"}} {}",
                load(n)
            );
        }
        let _ = writeln!(
            out,
            "banter_conversations_opened_total {}",
            load(&self.conversations_opened)
        );
        let _ = writeln!(
            out,
            "banter_content_reloads_total{{result=\"ok\"}} {}\nbanter_content_reloads_total{{result=\"refused\"}} {}",
            load(&self.content_reloads),
            load(&self.content_reload_failures)
        );
        for (bound, n) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                out,
                "banter_message_handling_seconds_bucket{{le=\"{bound}\"}} {}",
                load(n)
            );
        }
        let count = load(&self.latency_count);
        let _ = writeln!(
            out,
            "banter_message_handling_seconds_bucket{{le=\"+Inf\"}} {count}\nbanter_message_handling_seconds_sum {}\nbanter_message_handling_seconds_count {count}",
            load(&self.latency_sum_ns) as f64 / 1e9
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_family_with_its_samples() {
        let m = Metrics::default();
        m.session_opened();
        m.message("advance");
        m.message("no-such-kind");
        m.rejected(ErrorCode::NotReachable);
        m.action_run(ActionType::AcceptQuest);
        m.handled(Duration::from_micros(30));
        let text = m.render();
        assert!(text.contains("banter_open_sessions 1"));
        assert!(text.contains("banter_messages_total{type=\"advance\"} 1"));
        assert!(text.contains("banter_messages_total{type=\"invalid\"} 1"));
        assert!(text.contains("banter_rejections_total{code=\"not_reachable\"} 1"));
        assert!(text.contains("banter_actions_total{action=\"AcceptQuest\"} 1"));
        assert!(text.contains("banter_message_handling_seconds_bucket{le=\"0.00005\"} 1"));
        assert!(text.contains("banter_message_handling_seconds_bucket{le=\"0.000025\"} 0"));
        assert!(text.contains("banter_message_handling_seconds_count 1"));
    }
}
