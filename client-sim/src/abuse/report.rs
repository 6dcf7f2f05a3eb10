//! The whole run's report: every abuser's figures, the findings drawn from them, and the tables
//! for people. Only the prober and admitted tokens fail a run; the rest are notes.

use serde::Serialize;

use super::figures::tally_text;
use super::{
    ChurnReport, HealthReport, MalformedReport, NoReadReport, NoReadRequest, ReplayReport,
    SlowlorisReport,
};
use crate::bench::Machine;
use crate::report::table;

/// A thing worth a person's attention; `fail` ones make the command exit non-zero.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub fail: bool,
    pub what: String,
}

impl Finding {
    fn fail(what: String) -> Finding {
        Finding { fail: true, what }
    }

    fn note(what: String) -> Finding {
        Finding { fail: false, what }
    }
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AbuseReport {
    pub machine: Machine,
    pub seconds: f64,
    pub slowloris: SlowlorisReport,
    pub noread: NoReadReport,
    pub churn: ChurnReport,
    pub malformed: MalformedReport,
    pub replay: ReplayReport,
    pub health: HealthReport,
    pub findings: Vec<Finding>,
    /// No failing finding.
    pub ok: bool,
}

impl AbuseReport {
    /// The findings, from the figures.
    pub fn judge(&mut self) {
        let mut findings = Vec::new();
        let h = &self.health;
        if h.failures > 0 {
            findings.push(Finding::fail(format!(
                "/healthz failed {} of {} probes during the run (first: {})",
                h.failures,
                h.probes,
                h.failure_samples.first().map_or("-", String::as_str)
            )));
        }
        if !h.answering_after {
            findings.push(Finding::fail(
                "/healthz did not answer after the run".to_owned(),
            ));
        }
        if self.replay.admitted > 0 {
            findings.push(Finding::fail(format!(
                "{} expired or foreign-secret tokens got a session",
                self.replay.admitted
            )));
        }
        if self.churn.garbage_admitted > 0 {
            findings.push(Finding::fail(format!(
                "{} garbage tokens got a session",
                self.churn.garbage_admitted
            )));
        }
        let s = &self.slowloris;
        if s.open_at_end > 0 {
            findings.push(Finding::note(format!(
                "slowloris: {} of {} connections were still open after {:.0} s \
                 (the server never closed them)",
                s.open_at_end, s.connected, self.seconds
            )));
        }
        let n = &self.noread;
        if n.sessions_opened > 0 && n.closed_by_server == 0 {
            findings.push(Finding::note(format!(
                "never-reading: none of {} sessions was dropped in {:.0} s",
                n.sessions_opened, self.seconds
            )));
        }
        let valid_refused: u64 = self
            .churn
            .valid
            .iter()
            .filter(|(k, _)| k.as_str() != "101")
            .map(|(_, v)| v)
            .sum();
        if valid_refused > 0 {
            findings.push(Finding::note(format!(
                "churn: {valid_refused} valid-token upgrades did not get 101 ({})",
                tally_text(&self.churn.valid)
            )));
        }
        self.ok = !findings.iter().any(|f| f.fail);
        self.findings = findings;
    }

    /// Tables for people.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{}\nabuse for {:.0} s\n\n",
            self.machine.line(),
            self.seconds
        );
        let s = &self.slowloris;
        let n = &self.noread;
        let c = &self.churn;
        let m = &self.malformed;
        let r = &self.replay;
        let h = &self.health;
        let mut rows: Vec<Vec<String>> = Vec::new();
        // Two rows per abuser, what it did and what the server did, so lines stay readable.
        let mut pair = |name: &str, did: String, got: String| {
            rows.push(vec![name.to_owned(), "did".to_owned(), did]);
            rows.push(vec![String::new(), "server".to_owned(), got]);
        };
        pair(
            "slowloris",
            format!(
                "{} connections ({} connected), a header line every {} s, {} lines sent",
                s.connections, s.connected, s.line_interval_s, s.header_lines_sent
            ),
            format!(
                "closed {} (sent before closing: {}) after {}; open at end {}",
                s.closed_by_server,
                tally_text(&s.server_answers),
                s.closed_after_s.text("s"),
                s.open_at_end
            ),
        );
        pair(
            "never-reading",
            format!(
                "{} slots, {} sessions, {} requests ({} at {}/s each, SO_RCVBUF {})",
                n.slots,
                n.sessions_opened,
                n.requests_sent,
                n.request.map_or("-", NoReadRequest::name),
                n.rate_per_session,
                n.rcvbuf_bytes
            ),
            format!(
                "dropped {} after {}, requests sent by then {}; open at end {}; \
                 upgrade failures: {}",
                n.closed_by_server,
                n.closed_after_s.text("s"),
                n.requests_before_close.text(""),
                n.open_at_end,
                tally_text(&n.upgrade_failures)
            ),
        );
        pair(
            "churn",
            format!(
                "{} upgrades at {}/s target, {:.0}/s achieved, {} skipped (client behind)",
                c.attempted, c.target_per_sec, c.achieved_per_sec, c.skipped_client_behind
            ),
            format!(
                "valid: {}; garbage: {}; upgrade {}",
                tally_text(&c.valid),
                tally_text(&c.garbage),
                c.upgrade_ms.text("ms")
            ),
        );
        pair(
            "malformed",
            format!(
                "{} sessions, {} connects, {} frames ({})",
                m.sessions,
                m.connects,
                m.frames_total,
                tally_text(&m.frames_sent)
            ),
            format!(
                "errors: {}; byes: {}; closed by server {}",
                tally_text(&m.errors_received),
                tally_text(&m.byes),
                m.closed_by_server
            ),
        );
        pair(
            "replay",
            format!(
                "{} upgrades at {}/s target, {:.0}/s achieved; {} short-lived tokens, \
                 {} accepted while valid",
                r.attempted,
                r.target_per_sec,
                r.achieved_per_sec,
                r.short_lived_tokens,
                r.short_lived_accepted_while_valid
            ),
            format!(
                "{}; admitted {}",
                r.answers
                    .iter()
                    .map(|(k, v)| format!("{k} {}", tally_text(v)))
                    .collect::<Vec<_>>()
                    .join("; "),
                r.admitted
            ),
        );
        pair(
            "/healthz",
            format!("{} probes, one a second", h.probes),
            format!(
                "{} failed, slowest {:.1} ms, answering after: {}",
                h.failures, h.slowest_ms, h.answering_after
            ),
        );
        out.push_str(&table(&["abuser", "", "what"], &rows));
        for f in &self.findings {
            let label = if f.fail { "FAIL" } else { "note" };
            out.push_str(&format!("{label}: {}\n", f.what));
        }
        out.push_str(if self.ok {
            "the server held\n"
        } else {
            "the server did not hold\n"
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_health_and_admitted_tokens_fail_the_run() {
        let mut report = AbuseReport {
            health: HealthReport {
                probes: 30,
                answering_after: true,
                ..HealthReport::default()
            },
            slowloris: SlowlorisReport {
                connected: 10,
                open_at_end: 10,
                ..SlowlorisReport::default()
            },
            ..AbuseReport::default()
        };
        report.judge();
        assert!(report.ok, "{:?}", report.findings);
        assert_eq!(report.findings.len(), 1, "the slowloris note");
        report.replay.admitted = 1;
        report.judge();
        assert!(!report.ok);
        report.replay.admitted = 0;
        report.health.failures = 1;
        report.judge();
        assert!(!report.ok);
        report.health.failures = 0;
        report.health.answering_after = false;
        report.judge();
        assert!(!report.ok);
        report.health.answering_after = true;
        report.churn.garbage_admitted = 2;
        report.judge();
        assert!(!report.ok);
        assert!(report.table().contains("FAIL"));
    }
}
