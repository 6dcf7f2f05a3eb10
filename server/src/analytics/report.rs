//! From rollup rows to what a writer reads: one conversation's opens, visits, choice splits,
//! endings, time per line and the funnels of the quests it offers. Pure: the rows come from the
//! store (or a test), the report goes to JSON (`GET /admin/analytics`) or a table
//! (`banter-server analytics`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use super::{CONVERSATION, QUEST, buckets, metric, stage};
use crate::store::RollupRow;

/// Which rows a report sums.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// The conversation's content version (its source hash); `None`: every version.
    pub version: Option<String>,
    /// The locale its text was served in; `None`: every locale.
    pub locale: Option<String>,
    /// Each quest's version to count (the definitions served now); a quest not in here is
    /// counted over every version.
    pub quest_versions: BTreeMap<String, String>,
}

/// Everything known about one conversation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConversationReport {
    pub conversation: String,
    /// The version summed (`null`: all of them).
    pub version: Option<String>,
    /// The locale summed (`null`: all of them).
    pub locale: Option<String>,
    /// Every version with data, and its opens, most opened first.
    pub versions: Vec<Tally>,
    /// Every locale with data in the selected version(s), and its opens.
    pub locales: Vec<Tally>,
    pub opens: u64,
    /// Opens by entry line.
    pub entries: Vec<Tally>,
    /// Per line: visits and time on screen.
    pub lines: Vec<LineReport>,
    /// Per line with responses: how players split.
    pub choices: Vec<ChoiceSplit>,
    /// How conversations ended, and at which line.
    pub endings: Vec<EndingCount>,
    /// The quests offered in this conversation.
    pub quests: Vec<QuestFunnel>,
}

/// A name and a count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub name: String,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LineReport {
    pub line: String,
    pub visits: u64,
    /// Times the line left the screen (visits not yet left are not timed).
    pub timed: u64,
    /// Median and 90th percentile time on screen, in milliseconds (within 12%).
    pub median_ms: Option<u64>,
    pub p90_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChoiceSplit {
    pub line: String,
    pub chosen: u64,
    pub responses: Vec<ResponseShare>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResponseShare {
    pub response: String,
    pub count: u64,
    /// Of the choices made under the line, 0..=1.
    pub share: f64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EndingCount {
    /// `completed`, `jumped`, `closed`, `walked_away` or `disconnected`.
    pub how: String,
    /// The line on screen when it ended (`null` if none was).
    pub line: Option<String>,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuestFunnel {
    pub quest: String,
    /// The quest version counted (`null`: every version).
    pub version: Option<String>,
    /// Conversations (of every NPC) in which it was offered.
    pub offered: u64,
    /// Offers closed without accepting.
    pub declined: u64,
    pub accepted: u64,
    /// Each objective reaching its target, in funnel order (most reached first).
    pub objectives: Vec<Tally>,
    pub completed: u64,
    /// Acceptances given up from the quest log (`abandon_quest`); the quest may have been
    /// accepted again since.
    pub abandoned: u64,
    /// Accepted but not completed: `abandoned` plus `in_progress`.
    pub not_completed: u64,
    /// Accepted, neither completed nor abandoned: still in the players' quest logs.
    pub in_progress: u64,
    /// Each step of the funnel and how many were lost on it.
    pub drop_off: Vec<DropOff>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DropOff {
    pub from: String,
    pub to: String,
    pub lost: u64,
    /// Of `from`, 0..=1.
    pub share: f64,
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        // Rounded to 4 places so the JSON stays readable.
        ((part as f64 / whole as f64) * 10_000.0).round() / 10_000.0
    }
}

fn sorted_tallies(map: BTreeMap<String, u64>) -> Vec<Tally> {
    let mut tallies: Vec<Tally> = map
        .into_iter()
        .map(|(name, count)| Tally { name, count })
        .collect();
    tallies.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    tallies
}

/// The report of `conversation` from its rows and its offered quests' rows (any other rows are
/// ignored).
pub fn conversation(
    conversation: &str,
    rows: &[RollupRow],
    selection: &Selection,
) -> ConversationReport {
    let ours = |r: &&RollupRow| r.scope == CONVERSATION && r.name == conversation;
    let in_version = |r: &&RollupRow| selection.version.as_ref().is_none_or(|v| *v == r.version);
    let in_locale = |r: &&RollupRow| selection.locale.as_ref().is_none_or(|l| *l == r.locale);

    let mut versions = BTreeMap::new();
    let mut locales = BTreeMap::new();
    for r in rows
        .iter()
        .filter(ours)
        .filter(|r| r.metric == metric::OPEN)
    {
        *versions.entry(r.version.clone()).or_default() += count(r.count);
        if in_version(&r) {
            *locales.entry(r.locale.clone()).or_default() += count(r.count);
        }
    }

    let mut entries = BTreeMap::new();
    let mut visits: BTreeMap<String, u64> = BTreeMap::new();
    let mut times: BTreeMap<String, Vec<(u8, i64)>> = BTreeMap::new();
    let mut choices: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut endings: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
    let mut offered = BTreeSet::new();
    for r in rows
        .iter()
        .filter(ours)
        .filter(in_version)
        .filter(in_locale)
    {
        let n = count(r.count);
        match r.metric.as_str() {
            metric::OPEN => *entries.entry(r.subject.clone()).or_default() += n,
            metric::VISIT => *visits.entry(r.subject.clone()).or_default() += n,
            metric::LINE_MS => {
                if let Some(bucket) = buckets::parse(&r.detail) {
                    times
                        .entry(r.subject.clone())
                        .or_default()
                        .push((bucket, r.count));
                }
            }
            metric::CHOICE => {
                *choices
                    .entry(r.subject.clone())
                    .or_default()
                    .entry(r.detail.clone())
                    .or_default() += n;
            }
            metric::END => {
                let line = (!r.detail.is_empty()).then(|| r.detail.clone());
                *endings.entry((r.subject.clone(), line)).or_default() += n;
            }
            metric::OFFER => {
                offered.insert(r.subject.clone());
            }
            _ => {}
        }
    }

    let opens = entries.values().sum();
    let mut lines: Vec<LineReport> = visits
        .keys()
        .chain(times.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|line| {
            let counts = times.get(line).map_or(&[][..], Vec::as_slice);
            LineReport {
                line: line.clone(),
                visits: visits.get(line).copied().unwrap_or(0),
                timed: counts.iter().map(|(_, n)| count(*n)).sum(),
                median_ms: buckets::quantile(counts, 0.5),
                p90_ms: buckets::quantile(counts, 0.9),
            }
        })
        .collect();
    lines.sort_by(|a, b| b.visits.cmp(&a.visits).then_with(|| a.line.cmp(&b.line)));

    let choices = choices
        .into_iter()
        .map(|(line, responses)| {
            let chosen = responses.values().sum();
            let responses = sorted_tallies(responses)
                .into_iter()
                .map(|t| ResponseShare {
                    share: share(t.count, chosen),
                    response: t.name,
                    count: t.count,
                })
                .collect();
            ChoiceSplit {
                line,
                chosen,
                responses,
            }
        })
        .collect();

    let mut endings: Vec<EndingCount> = endings
        .into_iter()
        .map(|((how, line), count)| EndingCount { how, line, count })
        .collect();
    endings.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.how.cmp(&b.how)));

    let quests = offered
        .iter()
        .map(|quest| quest_funnel(quest, rows, selection))
        .collect();

    ConversationReport {
        conversation: conversation.to_owned(),
        version: selection.version.clone(),
        locale: selection.locale.clone(),
        versions: sorted_tallies(versions),
        locales: sorted_tallies(locales),
        opens,
        entries: sorted_tallies(entries),
        lines,
        choices,
        endings,
        quests,
    }
}

/// One quest's funnel from its stage rows.
pub fn quest_funnel(quest: &str, rows: &[RollupRow], selection: &Selection) -> QuestFunnel {
    let version = selection.quest_versions.get(quest);
    let mut stages: BTreeMap<&str, u64> = BTreeMap::new();
    let mut objectives = BTreeMap::new();
    for r in rows.iter().filter(|r| {
        r.scope == QUEST
            && r.name == quest
            && r.metric == metric::STAGE
            && version.is_none_or(|v| *v == r.version)
            // A quest's stages reached outside any conversation (game events) have no locale.
            && selection
                .locale
                .as_ref()
                .is_none_or(|l| *l == r.locale || r.locale.is_empty())
    }) {
        match r.subject.strip_prefix(stage::OBJECTIVE_PREFIX) {
            Some(objective) => {
                *objectives.entry(objective.to_owned()).or_default() += count(r.count);
            }
            None => *stages.entry(r.subject.as_str()).or_default() += count(r.count),
        }
    }
    let get = |s: &str| stages.get(s).copied().unwrap_or(0);
    let (offered, accepted, completed, abandoned) = (
        get(stage::OFFERED),
        get(stage::ACCEPTED),
        get(stage::COMPLETED),
        get(stage::ABANDONED),
    );
    let objectives = sorted_tallies(objectives);
    let mut steps = vec![
        ("offered".to_owned(), offered),
        ("accepted".to_owned(), accepted),
    ];
    steps.extend(objectives.iter().map(|t| (t.name.clone(), t.count)));
    steps.push(("completed".to_owned(), completed));
    let drop_off = steps
        .windows(2)
        .map(|pair| {
            let ((from, a), (to, b)) = (&pair[0], &pair[1]);
            let lost = a.saturating_sub(*b);
            DropOff {
                from: from.clone(),
                to: to.clone(),
                lost,
                share: share(lost, *a),
            }
        })
        .collect();
    QuestFunnel {
        quest: quest.to_owned(),
        version: version.cloned(),
        offered,
        declined: get(stage::DECLINED),
        accepted,
        objectives,
        completed,
        abandoned,
        not_completed: accepted.saturating_sub(completed),
        in_progress: accepted.saturating_sub(completed).saturating_sub(abandoned),
        drop_off,
    }
}

/// One line per conversation with data: its opens and endings, for the analytics index.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConversationSummary {
    pub conversation: String,
    pub opens: u64,
    /// Endings by how.
    pub endings: BTreeMap<String, u64>,
}

/// The index of `GET /admin/analytics` without a conversation: every conversation's opens and
/// endings in the selected version (here: each conversation's own `versions` entry, if given).
pub fn summaries(
    rows: &[RollupRow],
    versions: &BTreeMap<String, String>,
    locale: Option<&str>,
) -> Vec<ConversationSummary> {
    let mut by_name: BTreeMap<&str, ConversationSummary> = BTreeMap::new();
    for r in rows.iter().filter(|r| {
        r.scope == CONVERSATION
            && versions.get(&r.name).is_none_or(|v| *v == r.version)
            && locale.is_none_or(|l| l == r.locale)
    }) {
        let summary = by_name
            .entry(&r.name)
            .or_insert_with(|| ConversationSummary {
                conversation: r.name.clone(),
                opens: 0,
                endings: BTreeMap::new(),
            });
        match r.metric.as_str() {
            metric::OPEN => summary.opens += count(r.count),
            metric::END => *summary.endings.entry(r.subject.clone()).or_default() += count(r.count),
            _ => {}
        }
    }
    let mut out: Vec<ConversationSummary> = by_name.into_values().collect();
    out.sort_by(|a, b| {
        b.opens
            .cmp(&a.opens)
            .then_with(|| a.conversation.cmp(&b.conversation))
    });
    out
}

/// The report as text tables, for `banter-server analytics`.
pub fn render(report: &ConversationReport) -> String {
    let mut out = String::new();
    let pct = |s: f64| format!("{:.1}%", s * 100.0);
    let _ = writeln!(
        out,
        "conversation {}  version {}  locale {}  opens {}",
        report.conversation,
        report.version.as_deref().unwrap_or("all"),
        report.locale.as_deref().unwrap_or("all"),
        report.opens
    );
    if report.opens == 0 && report.lines.is_empty() {
        let _ = writeln!(out, "no data for this selection");
    }
    let tallies = |out: &mut String, title: &str, tallies: &[Tally]| {
        let _ = writeln!(out, "\n{title}");
        for t in tallies {
            let name = if t.name.is_empty() { "-" } else { &t.name };
            let _ = writeln!(out, "  {name:<34} {:>8}", t.count);
        }
    };
    if report.versions.len() > 1 || report.version.is_none() {
        tallies(&mut out, "versions (opens)", &report.versions);
    }
    if !report.locales.is_empty() {
        tallies(&mut out, "locales (opens)", &report.locales);
    }
    tallies(&mut out, "entries", &report.entries);
    let _ = writeln!(
        out,
        "\n  {:<34} {:>8} {:>8} {:>10} {:>10}",
        "line", "visits", "timed", "median", "p90"
    );
    let ms = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
    for l in &report.lines {
        let _ = writeln!(
            out,
            "  {:<34} {:>8} {:>8} {:>10} {:>10}",
            l.line,
            l.visits,
            l.timed,
            ms(l.median_ms),
            ms(l.p90_ms)
        );
    }
    for c in &report.choices {
        let _ = writeln!(out, "\nchoice at {} ({} chosen)", c.line, c.chosen);
        for r in &c.responses {
            let _ = writeln!(
                out,
                "  {:<34} {:>8} {:>8}",
                r.response,
                r.count,
                pct(r.share)
            );
        }
    }
    let _ = writeln!(out, "\nendings");
    for e in &report.endings {
        let _ = writeln!(
            out,
            "  {:<14} {:<19} {:>8}",
            e.how,
            e.line.as_deref().unwrap_or("-"),
            e.count
        );
    }
    for q in &report.quests {
        let _ = writeln!(
            out,
            "\nquest {} (version {})",
            q.quest,
            q.version.as_deref().unwrap_or("all")
        );
        let _ = writeln!(
            out,
            "  offered {}  declined {}  accepted {}  completed {}  abandoned {}  in progress {}",
            q.offered, q.declined, q.accepted, q.completed, q.abandoned, q.in_progress
        );
        for d in &q.drop_off {
            let _ = writeln!(
                out,
                "  {:>16} -> {:<16} lost {:>6} {:>8}",
                d.from,
                d.to,
                d.lost,
                pct(d.share)
            );
        }
    }
    out
}
