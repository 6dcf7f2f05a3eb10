//! One party member, from the party's forming to leaving it: what the members tell each other
//! ([`Team`]), the rounds, and whether the member was paid once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::Screen;
use banter_protocol::{ClientMessage, FactSheet, Profile, QuestStatus, ServerMessage};
use tokio::sync::watch;
use tokio::time::Instant;

use super::walk::GroupWalk;
use super::{
    JOIN_PATIENCE, MANDATORY_ROUNDS, PROMISED, PartyReport, PartyRun, ROUND_PATIENCE, wait_for,
};
use crate::bot::{BotReport, SimRng, WALK_SPEED, WALK_TICK, sim_rng};
use crate::error::{Result, SimError};
use crate::session::{OpenConversation, Session, refused};

/// The round a member was gone from (failed or finished early).
const GONE: u32 = u32::MAX;

/// What the members tell each other outside the protocol, as players do by voice.
pub(super) struct Team {
    /// Each member's player id, in party order (the first leads).
    pub(super) players: Vec<String>,
    /// The round each member is ready for (at its spot, no conversation open); [`GONE`]: gone.
    ready: watch::Sender<Vec<u32>>,
    /// The round the leader has talked for; [`GONE`]: no more rounds.
    started: watch::Sender<u32>,
}

impl Team {
    pub(super) fn new(players: Vec<String>) -> Team {
        let n = players.len();
        Team {
            players,
            ready: watch::channel(vec![0; n]).0,
            started: watch::channel(0).0,
        }
    }

    fn ready(&self, k: usize, round: u32) {
        self.ready.send_modify(|rounds| {
            if let Some(r) = rounds.get_mut(k) {
                *r = (*r).max(round);
            }
        });
    }

    fn gone(&self, k: usize) {
        self.ready(k, GONE);
        if k == 0 {
            self.started.send_replace(GONE);
        }
    }

    /// Waits until every member is ready for `round` (or gone); false after `patience`.
    async fn all_ready(&self, round: u32, patience: Duration) -> bool {
        let mut ready = self.ready.subscribe();
        let all = ready.wait_for(|rounds| rounds.iter().all(|&r| r >= round));
        matches!(tokio::time::timeout(patience, all).await, Ok(Ok(_)))
    }

    fn start(&self, round: u32) {
        self.started.send_replace(round);
    }

    /// Waits until the leader has talked for `round` or stopped: the round it started
    /// ([`GONE`] for a stop), `None` after `patience`.
    async fn started(&self, round: u32, patience: Duration) -> Option<u32> {
        let mut started = self.started.subscribe();
        let reached = started.wait_for(|&s| s >= round);
        match tokio::time::timeout(patience, reached).await {
            Ok(Ok(s)) => Some(*s),
            _ => None,
        }
    }
}

/// What one member did.
#[derive(Debug, Default)]
pub(super) struct MemberStats {
    pub(super) joined_party: bool,
    shared_conversations: u64,
    joined_by_server: u64,
    pub(super) votes: u64,
    pub(super) advances: u64,
    pub(super) ballots: BTreeMap<String, u64>,
    paid_once: bool,
    paid_more: bool,
    confirmed: bool,
    pub(super) problems: Vec<String>,
    /// `participants` pushes whose list was older than the roster already held.
    pub(super) rosters_out_of_order: u64,
}

impl MemberStats {
    pub(super) fn add_to(self, report: &mut PartyReport) {
        report.shared_conversations += self.shared_conversations;
        report.joined_by_server += self.joined_by_server;
        report.votes += self.votes;
        report.advances += self.advances;
        for (by, n) in self.ballots {
            *report.ballots.entry(by).or_insert(0) += n;
        }
        report.paid_once += usize::from(self.paid_once);
        report.paid_more += usize::from(self.paid_more);
        report.confirmed += usize::from(self.confirmed);
        report.rosters_out_of_order += self.rosters_out_of_order;
        for problem in self.problems {
            report.problem(problem);
        }
    }
}

/// The facts a member's talk to the NPC after the ride was opened with.
struct Confirmation {
    status: QuestStatus,
    coins: i64,
    experience: i64,
}

/// One member, from the party's forming to leaving it.
pub(super) async fn member(
    k: usize,
    mut session: Session,
    seed: u64,
    team: Arc<Team>,
    run: &PartyRun,
) -> (BotReport, MemberStats) {
    session.follow_group();
    let start = session.facts.profile.clone();
    let mut m = Member {
        k,
        me: session.player().to_owned(),
        team: team.clone(),
        run,
        rng: sim_rng(seed),
        stats: MemberStats::default(),
        confirmation: None,
    };
    let played = m.play(&mut session).await;
    team.gone(k);
    if let Err(e) = &played {
        if !matches!(e, SimError::Refused { .. }) {
            session.count_error(format!("party member {k}: {e}"));
        }
        m.stats
            .problems
            .push(format!("{} (member {k} of a party): {e}", m.me));
    }
    // Leave the party, as a player logging off for good.
    match session
        .request(ClientMessage::PartyLeave { id: None })
        .await
    {
        Ok(reply) => {
            let left = reply
                .messages
                .iter()
                .any(|m| matches!(m, ServerMessage::Party { party: None }));
            if let Err(e) = refused(reply) {
                m.stats.problems.push(format!("{}: party_leave: {e}", m.me));
            } else if !left {
                m.stats.problems.push(format!(
                    "{}: party_leave was answered without `party` (absent party)",
                    m.me
                ));
            }
        }
        Err(e) => {
            session.count_error(format!("party_leave: {e}"));
            m.stats.problems.push(format!("{}: party_leave: {e}", m.me));
        }
    }
    m.verify(&session, &start);
    let player = session.player().to_owned();
    let metrics = session.finish().await;
    (
        BotReport {
            player: Some(player),
            metrics: Some(metrics),
            events_posted: 0,
            start_error: None,
        },
        m.stats,
    )
}

struct Member<'r> {
    k: usize,
    me: String,
    team: Arc<Team>,
    run: &'r PartyRun,
    rng: SimRng,
    stats: MemberStats,
    confirmation: Option<Confirmation>,
}

impl Member<'_> {
    fn leads(&self) -> bool {
        self.k == 0
    }

    fn size(&self) -> usize {
        self.team.players.len()
    }

    async fn play(&mut self, session: &mut Session) -> Result<()> {
        let stop = self.run.stop.clone();
        let n = self.size();
        // Spawn at the gathering place (a few studs apart), form the party, walk over.
        let [gx, gy, gz] = stop.gathering;
        let spawn = [gx + self.k as f64 * 1.5, gy, gz];
        session.walk_to(spawn, WALK_SPEED, WALK_TICK, None).await?;
        let party = self.form(session).await?;
        self.stats.joined_party = true;
        session
            .walk_to(stop.spot(self.k, n), WALK_SPEED, WALK_TICK, None)
            .await?;
        let mut round = 1u32;
        loop {
            self.team.ready(self.k, round);
            let open = if self.leads() {
                if !self.team.all_ready(round, ROUND_PATIENCE).await {
                    self.stats.problems.push(format!(
                        "{}: not every member was ready for round {round} within {}s",
                        self.me,
                        ROUND_PATIENCE.as_secs()
                    ));
                }
                if round > MANDATORY_ROUNDS && Instant::now() >= self.run.deadline {
                    self.team.start(GONE);
                    return Ok(());
                }
                self.team.start(round);
                let reply = session.send_talk(&stop.npc).await?;
                refused(reply)?;
                let opened = wait_for(session, PROMISED, |m| {
                    matches!(m, ServerMessage::Opened { .. })
                })
                .await?
                .ok_or_else(|| SimError::Protocol("a talk was answered without `opened`".into()))?;
                self.stats.shared_conversations += 1;
                opened
            } else {
                match self.team.started(round, ROUND_PATIENCE).await {
                    Some(started) if started == round => {}
                    Some(_) => return Ok(()),
                    None => {
                        return Err(SimError::Other(format!(
                            "the leader did not talk for round {round} within {}s",
                            ROUND_PATIENCE.as_secs()
                        )));
                    }
                }
                let opened = wait_for(session, PROMISED, |m| {
                    matches!(m, ServerMessage::Opened { .. })
                })
                .await?
                .ok_or_else(|| {
                    SimError::Protocol(format!(
                        "the party's shared conversation did not take member {} in within {}s \
                         (free, within reach: PROTOCOL.md section 17.2 says at once)",
                        self.k,
                        PROMISED.as_secs()
                    ))
                })?;
                self.stats.joined_by_server += 1;
                opened
            };
            let open = session.conversation_opened(open).await?;
            match &open.shared {
                Some(shared) if shared.party == party => {}
                Some(shared) => {
                    return Err(SimError::Protocol(format!(
                        "a conversation of party {} opened for a member of party {party}",
                        shared.party
                    )));
                }
                None => {
                    return Err(SimError::Protocol(format!(
                        "`{}` opened without `shared` for a party member",
                        open.name
                    )));
                }
            }
            if round == MANDATORY_ROUNDS {
                self.confirmation = Some(Confirmation {
                    status: status_in(&open.facts, &stop.quest.id),
                    coins: open.facts.coins,
                    experience: open.facts.experience,
                });
            }
            self.walk(session, &open).await?;
            round += 1;
        }
    }

    /// Forms the party over the protocol: the leader invites each member, each accepts the
    /// invitation it was pushed. The party's id.
    async fn form(&mut self, session: &mut Session) -> Result<String> {
        let n = self.size();
        let leader = self.team.players.first().cloned().unwrap_or_default();
        if self.leads() {
            let mut party = None;
            for invitee in self.team.players.iter().skip(1) {
                let reply = session
                    .request(ClientMessage::PartyInvite {
                        id: None,
                        player: invitee.clone(),
                    })
                    .await?;
                let view = reply.messages.iter().find_map(|m| match m {
                    ServerMessage::Party { party: Some(p) } => Some(p.id.clone()),
                    _ => None,
                });
                refused(reply)?;
                party = party.or(view);
            }
            let party = party.ok_or_else(|| {
                SimError::Protocol("party_invite was answered without the party".into())
            })?;
            // Every member has accepted once the party's news says so.
            wait_for(
                session,
                PROMISED,
                |m| matches!(m, ServerMessage::Party { party: Some(p) } if p.members.len() == n),
            )
            .await?
            .ok_or_else(|| {
                SimError::Other(format!(
                    "the party did not reach {n} members within {}s",
                    PROMISED.as_secs()
                ))
            })?;
            Ok(party)
        } else {
            let invited = wait_for(
                session,
                PROMISED,
                |m| matches!(m, ServerMessage::PartyInvited { from, .. } if *from == leader),
            )
            .await?;
            let Some(ServerMessage::PartyInvited { party, .. }) = invited else {
                return Err(SimError::Protocol(format!(
                    "no `party_invited` from the leader within {}s",
                    PROMISED.as_secs()
                )));
            };
            let reply = session
                .request(ClientMessage::PartyAccept {
                    id: None,
                    party: party.clone(),
                })
                .await?;
            let member = reply.messages.iter().any(|m| {
                matches!(m, ServerMessage::Party { party: Some(p) }
                    if p.id == party && p.members.contains(&self.me))
            });
            refused(reply)?;
            if !member {
                return Err(SimError::Protocol(
                    "party_accept was answered without the party naming the member".into(),
                ));
            }
            Ok(party)
        }
    }

    /// Walks one shared conversation to its end (this member's `close`).
    async fn walk(&mut self, session: &mut Session, open: &OpenConversation) -> Result<()> {
        let content = session.content().clone();
        let mut group = GroupWalk::open(
            open,
            &self.me,
            self.size(),
            self.run.pace,
            &session.facts.sheet,
        )?;
        let walked = group
            .run(session, &content, &mut self.rng, &mut self.stats)
            .await;
        if walked.is_err() && group.walk.screen() != Screen::Ended {
            // Leave the group's conversation (a refusal here changes nothing: it was counted).
            let _ = session.request(ClientMessage::Close { id: None }).await;
        }
        if self.leads()
            && let Some(missing) = group.never_joined
        {
            self.stats.problems.push(format!(
                "{}: only {missing} of {} members were in the conversation after {}s",
                self.me,
                self.size(),
                JOIN_PATIENCE.as_secs()
            ));
        }
        walked
    }

    /// Was this member paid the quest's reward exactly once, and did talking again say so?
    fn verify(&mut self, session: &Session, start: &Profile) {
        let quest = &self.run.stop.quest;
        let coins = i64::from(quest.rewards.coins);
        let experience = i64::from(quest.rewards.experience);
        let payouts: Vec<i64> = session
            .metrics
            .acknowledged
            .rewards
            .iter()
            .filter(|(q, _)| *q == quest.id)
            .map(|(_, c)| *c)
            .collect();
        let profile = &session.facts.profile;
        let grown = (
            profile.coins - start.coins,
            profile.experience - start.experience,
        );
        self.stats.paid_more = payouts.len() > 1;
        self.stats.paid_once = payouts == [coins] && grown == (coins, experience);
        if !self.stats.paid_once {
            self.stats.problems.push(format!(
                "{}: {} paid {} time(s) {payouts:?}, profile grew by {} coins and {} xp \
                 (expected once: {coins} coins, {experience} xp)",
                self.me,
                quest.id,
                payouts.len(),
                grown.0,
                grown.1
            ));
        }
        self.stats.confirmed = self.confirmation.as_ref().is_some_and(|c| {
            c.status == QuestStatus::Completed
                && c.coins == start.coins + coins
                && c.experience == start.experience + experience
        });
        if !self.stats.confirmed {
            let seen = self.confirmation.as_ref().map_or_else(
                || "never talked again".to_owned(),
                |c| {
                    format!(
                        "{} with {} coins, {} xp",
                        c.status.name(),
                        c.coins,
                        c.experience
                    )
                },
            );
            self.stats.problems.push(format!(
                "{}: talking again, the server's facts said {} {seen}",
                self.me, quest.id
            ));
        }
    }
}

/// A quest's status in an `opened` sheet (absent: available).
fn status_in(sheet: &FactSheet, quest: &str) -> QuestStatus {
    sheet
        .quests
        .get(quest)
        .copied()
        .unwrap_or(QuestStatus::Available)
}
