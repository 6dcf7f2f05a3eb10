//! How a cheat is judged: what the server did with it ([`Outcome`]), the verdict against what
//! was expected and whether the player's facts stayed the same ([`Verdict`]), and the report's
//! rows, counts and table.

use std::fmt;

use banter_protocol::{ByeReason, ErrorCode};
use serde::Serialize;

use crate::report::table;

/// What the server did with a cheat (or what it should do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Refused with this error code.
    Code(ErrorCode),
    /// An HTTP status (a refused upgrade, an internal endpoint).
    Http(u16),
    /// An HTTP status with the JSON error's code (`409 stale_batch`): where one status stands
    /// for several refusals, the code says which.
    HttpError(u16, String),
    /// The session was ended with this reason.
    Bye(ByeReason),
    /// The connection was dropped without a `bye`.
    Dropped,
    /// The server accepted it.
    Accepted,
    /// The cheat could not be run (setup failed).
    Failed(String),
    /// Judged by the state the cheat left, not by any answer: `held` when the state shows the
    /// cheat did not work; `seen` says what the state was (and the answers on the way).
    State { held: bool, seen: String },
    /// Not run, and why (a cheat that needs a second server instance when none was given).
    Skipped(String),
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Code(code) => f.write_str(code.name()),
            Outcome::Http(status) => write!(f, "HTTP {status}"),
            Outcome::HttpError(status, code) => write!(f, "HTTP {status} {code}"),
            Outcome::Bye(reason) => {
                let name = serde_json::to_value(reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                write!(f, "bye {name}")
            }
            Outcome::Dropped => f.write_str("dropped"),
            Outcome::Accepted => f.write_str("accepted"),
            Outcome::Failed(why) => write!(f, "failed: {why}"),
            Outcome::State { seen, .. } => f.write_str(seen),
            Outcome::Skipped(why) => write!(f, "skipped: {why}"),
        }
    }
}

/// The verdict on one cheat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Refused as expected, nothing changed.
    Blocked,
    /// Refused and nothing changed, but not with the expected answer.
    WrongAnswer,
    /// Accepted, or the player's facts changed: the cheat got through.
    PassedThrough,
    /// The cheat could not be run.
    Failed,
    /// Not run: what it needs was not given (a second server instance).
    Skipped,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Blocked => "blocked",
            Verdict::WrongAnswer => "WRONG ANSWER",
            Verdict::PassedThrough => "PASSED THROUGH",
            Verdict::Failed => "FAILED TO RUN",
            Verdict::Skipped => "skipped",
        }
    }
}

/// Judges one cheat: what was expected, what happened, and whether the facts stayed the same
/// (`None` when they could not be read back). A cheat judged by state is blocked when its state
/// held, whatever the words describing it.
pub fn verdict(expected: &Outcome, got: &Outcome, unchanged: Option<bool>) -> Verdict {
    match got {
        Outcome::Failed(_) => return Verdict::Failed,
        Outcome::Skipped(_) => return Verdict::Skipped,
        Outcome::Accepted => return Verdict::PassedThrough,
        Outcome::Http(status) | Outcome::HttpError(status, _) if *status < 400 => {
            return Verdict::PassedThrough;
        }
        Outcome::State { held: false, .. } => return Verdict::PassedThrough,
        _ => {}
    }
    if unchanged == Some(false) {
        return Verdict::PassedThrough;
    }
    let as_expected = match (expected, got) {
        (Outcome::State { held: true, .. }, Outcome::State { held: true, .. }) => true,
        _ => got == expected,
    };
    if as_expected {
        Verdict::Blocked
    } else {
        Verdict::WrongAnswer
    }
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheatRow {
    pub cheat: String,
    pub expected: String,
    pub got: String,
    /// Whether the player's facts were the same afterwards (`null`: could not be read back).
    pub profile_unchanged: Option<bool>,
    pub verdict: Verdict,
}

/// The whole catalogue's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttackReport {
    pub rows: Vec<CheatRow>,
    pub cheats: usize,
    pub blocked: usize,
    pub passed_through: usize,
    pub wrong_answer: usize,
    pub failed: usize,
    /// Not run for want of what they need (a second server instance): not a failure.
    pub skipped: usize,
}

impl AttackReport {
    pub fn from_rows(rows: Vec<CheatRow>) -> AttackReport {
        let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
        AttackReport {
            cheats: rows.len(),
            blocked: count(Verdict::Blocked),
            passed_through: count(Verdict::PassedThrough),
            wrong_answer: count(Verdict::WrongAnswer),
            failed: count(Verdict::Failed),
            skipped: count(Verdict::Skipped),
            rows,
        }
    }

    /// True when every cheat that ran was blocked with its expected answer.
    pub fn clean(&self) -> bool {
        self.blocked + self.skipped == self.cheats
    }

    pub fn table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.cheat.clone(),
                    r.expected.clone(),
                    r.got.clone(),
                    match r.profile_unchanged {
                        Some(true) => "same".to_owned(),
                        Some(false) => "CHANGED".to_owned(),
                        None => "?".to_owned(),
                    },
                    r.verdict.name().to_owned(),
                ]
            })
            .collect();
        let mut out = table(&["cheat", "expected", "got", "profile", "verdict"], &rows);
        out.push_str(&format!(
            "\n{} cheats: {} blocked, {} passed through, {} wrong answer, {} failed to run",
            self.cheats, self.blocked, self.passed_through, self.wrong_answer, self.failed
        ));
        if self.skipped > 0 {
            out.push_str(&format!(", {} skipped", self.skipped));
        }
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_needs_the_expected_answer_and_unchanged_facts() {
        let not_armed = Outcome::Code(ErrorCode::NotArmed);
        assert_eq!(
            verdict(&not_armed, &not_armed, Some(true)),
            Verdict::Blocked
        );
        assert_eq!(
            verdict(&not_armed, &not_armed, Some(false)),
            Verdict::PassedThrough,
            "a refusal that changed the facts let the cheat through"
        );
        assert_eq!(
            verdict(&not_armed, &Outcome::Accepted, Some(true)),
            Verdict::PassedThrough
        );
        assert_eq!(
            verdict(
                &not_armed,
                &Outcome::Code(ErrorCode::PayloadMismatch),
                Some(true)
            ),
            Verdict::WrongAnswer
        );
        assert_eq!(
            verdict(&Outcome::Http(401), &Outcome::Http(101), None),
            Verdict::PassedThrough
        );
        assert_eq!(
            verdict(&Outcome::Http(401), &Outcome::Http(401), None),
            Verdict::Blocked,
            "facts that cannot be read back do not fail a refusal"
        );
        assert_eq!(
            verdict(&not_armed, &Outcome::Failed("x".into()), None),
            Verdict::Failed
        );
        let elsewhere = Outcome::Code(ErrorCode::SharedElsewhere);
        let skipped = Outcome::Skipped("needs a second instance".into());
        assert_eq!(verdict(&elsewhere, &skipped, None), Verdict::Skipped);
        assert_eq!(skipped.to_string(), "skipped: needs a second instance");
    }

    #[test]
    fn outcomes_print_as_the_wire_says() {
        assert_eq!(Outcome::Code(ErrorCode::TooFar).to_string(), "too_far");
        assert_eq!(Outcome::Http(401).to_string(), "HTTP 401");
        assert_eq!(
            Outcome::HttpError(409, "stale_batch".into()).to_string(),
            "HTTP 409 stale_batch"
        );
        assert_eq!(
            verdict(
                &Outcome::HttpError(409, "stale_batch".into()),
                &Outcome::HttpError(409, "batch_gap".into()),
                Some(true)
            ),
            Verdict::WrongAnswer
        );
        assert_eq!(
            Outcome::Bye(ByeReason::Flooding).to_string(),
            "bye flooding"
        );
    }

    #[test]
    fn the_report_counts_verdicts() {
        let row = |verdict| CheatRow {
            cheat: "c".into(),
            expected: "e".into(),
            got: "g".into(),
            profile_unchanged: Some(true),
            verdict,
        };
        let report = AttackReport::from_rows(vec![
            row(Verdict::Blocked),
            row(Verdict::PassedThrough),
            row(Verdict::WrongAnswer),
        ]);
        assert_eq!(report.passed_through, 1);
        assert_eq!(report.blocked, 1);
        assert!(!report.clean());
        let ran_or_skipped =
            AttackReport::from_rows(vec![row(Verdict::Blocked), row(Verdict::Skipped)]);
        assert!(
            ran_or_skipped.clean(),
            "a skipped row does not fail the run"
        );
        assert!(ran_or_skipped.table().contains("1 skipped"));
        let json = serde_json::to_value(&report).expect("json");
        assert_eq!(json["passed_through"], 1);
        assert_eq!(json["rows"][1]["verdict"], "passed_through");
        assert!(report.table().contains("PASSED THROUGH"));
    }
}
