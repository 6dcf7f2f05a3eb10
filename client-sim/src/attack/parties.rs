//! Cheats on parties and shared conversations (PROTOCOL.md section 17), at Wren and her ferry
//! (`content/dialogue/base/Wren.json`: `Majority` ballots with a 20 s limit, the oars by `Roll`).
//!
//! Each cheat forms its own parties of new players over the protocol, stands them within Wren's
//! reach, and opens her shared conversation honestly; then one of them cheats. A cheat answered
//! by a refusal is judged by its code and by the cheater's facts; one whose every step a correct
//! server may accept (a changed vote, an outsider's own conversation, leaving the party) is
//! judged by what the group was told and paid ([`Outcome::State`]). The facts are read back at
//! the kelpwick skipper, whose conversation is not shared, so reading them opens nothing for a
//! party.
//!
//! - **Vote stuffing**: one of two participants votes five times, for two responses. One voter
//!   is never more than half of two: no `chosen` may come; when the other votes with its latest
//!   vote, the decision counts each voter once.
//! - **A response not shown**: the motor launch needs 100 coins; a fresh member votes for it
//!   (`not_reachable`: it was never shown to them).
//! - **An outsider talks to the party's NPC**: a player in no party talks to Wren while a party's
//!   conversation is open: it gets one of its own (no `shared`), picks in it, and the party
//!   hears nothing of it; the party's decision counts only its own members.
//! - **An outsider votes** in the party's ballot with no conversation open (`no_conversation`).
//! - **A follower advances** the group's walk (`not_leader`); **a vote on a line the group has
//!   left** (`not_current`).
//! - **Another member's arming**: a member joins after the group passed the line that armed the
//!   leader's `AcceptQuest`, and sends it (`not_armed`).
//! - **Leaving between a vote and its payout**: one of three votes on the oars, then leaves the
//!   party; the two who stay ride on and are paid once each; the leaver is paid nothing.
//! - **Two parties racing** for Wren at the same instant: each gets its own conversation, decides
//!   its own ballot, and hears nothing of the other.
//! - **A member on another instance** (needs `--second-endpoint`, the same server on the same
//!   PostgreSQL database): the party's conversation is open on the first; the member's talk on
//!   the second is refused `shared_elsewhere`.
//!
//! Why one file over 600 lines: a list of independent cheats, each readable alone, over the one
//! party member (`Member`) they share.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use banter_protocol::{ActionType, ClientMessage, Position, QuestStatus, ServerMessage};
use tokio::time::Instant;

use super::cheater::{
    Cheat, CheatFuture, Cheater, Observed, action_message, advance, choose, outcome,
};
use super::{AttackOptions, Outcome};
use crate::connection::Reply;
use crate::error::{Result, SimError};
use crate::facts::{ClientFacts, Snapshot};

const WREN: &str = "wren";
/// Where the facts are read back: near Wren, and not shared.
const JUDGE: &str = "skipper_kelpwick";
const QUEST: &str = "FerryForTwo";
const GREET: &str = "Ferry_Greet";
const SKIFF: &str = "Ferry_Greet_r1";
const BARGE: &str = "Ferry_Greet_r2";
/// Shown only with 100 coins or more.
const LAUNCH: &str = "Ferry_Greet_r3";
const ROWING: &str = "Ferry_Rowing";
const ROW: &str = "Ferry_Rowing_r1";
const FAR_BAR: &str = "Ferry_FarBar";
const CHECK_HERE: &str = "Ferry_Check_r1";
const OBJECTIVE: &str = "FerryForTwo|CrossTheShoals|1|kelpwick";
const CHECK: &str = "FerryForTwo|Ferry_Complete|Ferry_NotYet";
/// How long a message the protocol promises (a push to the group) may take.
const PROMPT: Duration = Duration::from_secs(10);
/// How long a member listens for something that must not come.
const QUIET: Duration = Duration::from_millis(1500);

/// The party cheats, in the report's order.
pub(super) fn cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    use banter_protocol::ErrorCode::*;
    let o = options;
    vec![
        Cheat {
            name: "party: one voter votes five times (ballot stuffing)",
            expected: held("no decision by one voter; only its latest vote counted"),
            run: stuffing(o),
        },
        Cheat {
            name: "party: vote for a response not shown to the voter",
            expected: Outcome::Code(NotReachable),
            run: unshown_vote(o),
        },
        Cheat {
            name: "party: outsider talks to the party's NPC",
            expected: held("own conversation; the party heard nothing of it"),
            run: outsider_talks(o),
        },
        Cheat {
            name: "party: outsider votes in the party's ballot",
            expected: Outcome::Code(NoConversation),
            run: outsider_votes(o),
        },
        Cheat {
            name: "party: follower advances the group's walk",
            expected: Outcome::Code(NotLeader),
            run: after_the_boat(o, "party-follower-adv", 10, advance(GREET_NEXT)),
        },
        Cheat {
            name: "party: vote on a line the group has left",
            expected: Outcome::Code(NotCurrent),
            run: after_the_boat(o, "party-stale-vote", 1, choose(SKIFF)),
        },
        Cheat {
            name: "party: action armed only for another participant",
            expected: Outcome::Code(NotArmed),
            run: others_arming(o),
        },
        Cheat {
            name: "party: leaving the party between a vote and its payout",
            expected: held("leaver unpaid; the two who stayed paid once each"),
            run: leave_before_payout(o),
        },
        Cheat {
            name: "party: two parties race for one NPC",
            expected: held("two conversations, no cross-talk"),
            run: race(o),
        },
        Cheat {
            name: "party: member talks on another instance",
            expected: Outcome::Code(SharedElsewhere),
            run: other_instance(o),
        },
    ]
}

/// The line the barge leads to (the follower's advance names it).
const GREET_NEXT: &str = "Ferry_Barge";

fn held(seen: &str) -> Outcome {
    Outcome::State {
        held: true,
        seen: seen.to_owned(),
    }
}

/// A snapshot without what a sheet may name or leave out alike: a quest absent from a sheet is
/// available, and an objective absent from it has no progress.
fn settled(mut snapshot: Snapshot) -> Snapshot {
    snapshot
        .quests
        .retain(|_, status| *status != QuestStatus::Available);
    snapshot.progress.retain(|_, progress| *progress > 0);
    snapshot
}

/// Where a party member stands: on a circle of 4 studs around Wren (`slot` of 12).
fn spot(options: &AttackOptions, slot: usize) -> Result<Position> {
    let wren = options
        .content
        .npc(WREN)
        .ok_or_else(|| SimError::Content("the content has no NPC `wren`".to_owned()))?;
    let angle = std::f64::consts::TAU * slot as f64 / 12.0;
    let [x, y, z] = wren.position;
    Ok([x + 4.0 * angle.sin(), y, z - 4.0 * angle.cos()])
}

/// A player of a party cheat: a [`Cheater`] that keeps every message it was sent (in replies
/// and pushed), for what the group is told.
struct Member {
    p: Cheater,
    options: Arc<AttackOptions>,
    inbox: VecDeque<ServerMessage>,
}

impl Member {
    async fn new(options: &Arc<AttackOptions>, tag: &str) -> Result<Member> {
        Ok(Member {
            p: Cheater::new(options, tag).await?,
            options: options.clone(),
            inbox: VecDeque::new(),
        })
    }

    /// A member standing at `slot` around Wren.
    async fn at(options: &Arc<AttackOptions>, tag: &str, slot: usize) -> Result<Member> {
        let mut member = Member::new(options, tag).await?;
        member.p.walk_to(spot(options, slot)?).await?;
        Ok(member)
    }

    fn player(&self) -> String {
        self.p.login.player.clone()
    }

    fn take(&mut self, message: ServerMessage) -> ServerMessage {
        let content = &self.options.content;
        match &message {
            ServerMessage::Effect {
                effect, profile, ..
            } => self.p.facts.apply(content, effect, profile),
            ServerMessage::Opened { facts, .. } => self.p.facts.opened(content, facts),
            _ => {}
        }
        message
    }

    /// Sends a message; its answer. What came with it is kept.
    async fn send(&mut self, message: ClientMessage) -> Result<Reply> {
        let reply = self.p.send(message).await?;
        self.inbox.extend(reply.messages.iter().cloned());
        Ok(reply)
    }

    /// An honest step that must be accepted.
    async fn honest(&mut self, message: ClientMessage) -> Result<Reply> {
        let kind = message.kind();
        let reply = self.send(message).await?;
        match &reply.answer {
            Ok(()) => Ok(reply),
            Err(r) => Err(SimError::Other(format!(
                "honest {kind} by {} refused: {}",
                self.player(),
                r.code.name()
            ))),
        }
    }

    /// Talks to Wren (after the cooldown); the reply.
    async fn talk_wren(&mut self) -> Result<Reply> {
        let reply = self.p.talk(WREN, Some(WREN)).await?;
        self.inbox.extend(reply.messages.iter().cloned());
        Ok(reply)
    }

    /// Moves whatever arrived into the inbox.
    fn drain(&mut self) {
        let arrived = match self.p.connection() {
            Ok(connection) => connection.drain(),
            Err(_) => Vec::new(),
        };
        for message in arrived {
            let message = self.take(message);
            self.inbox.push_back(message);
        }
    }

    /// True if any message kept so far (or arrived now) is `wanted`.
    fn saw(&mut self, wanted: impl Fn(&ServerMessage) -> bool) -> bool {
        self.drain();
        self.inbox.iter().any(wanted)
    }

    /// The first message `wanted` accepts (taken out of the inbox), waiting at most `patience`.
    async fn wait(
        &mut self,
        patience: Duration,
        wanted: impl Fn(&ServerMessage) -> bool,
    ) -> Result<Option<ServerMessage>> {
        self.drain();
        if let Some(at) = self.inbox.iter().position(&wanted) {
            return Ok(self.inbox.remove(at));
        }
        let until = Instant::now() + patience;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.p.connection()?.recv(left).await {
                Ok(message) => {
                    let message = self.take(message);
                    if wanted(&message) {
                        return Ok(Some(message));
                    }
                    self.inbox.push_back(message);
                }
                Err(SimError::Timeout(_)) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// Like [`Member::wait`], an error if nothing came: `what` says what was promised.
    async fn expect(
        &mut self,
        what: &str,
        wanted: impl Fn(&ServerMessage) -> bool,
    ) -> Result<ServerMessage> {
        self.wait(PROMPT, wanted).await?.ok_or_else(|| {
            SimError::Other(format!(
                "{} was not sent {what} within {}s",
                self.player(),
                PROMPT.as_secs()
            ))
        })
    }

    /// What the server says the facts are now (read at the kelpwick skipper), settled.
    async fn facts_now(&mut self) -> Result<Snapshot> {
        self.p.server_facts(JUDGE).await.map(settled)
    }

    fn snapshot(&self) -> Snapshot {
        settled(self.p.facts.snapshot())
    }
}

fn is_chosen(m: &ServerMessage) -> bool {
    matches!(m, ServerMessage::Chosen { .. })
}

fn is_opened(m: &ServerMessage) -> bool {
    matches!(m, ServerMessage::Opened { .. })
}

/// True for any message of the group that names `player` (a vote, a roster, a decision).
fn names(message: &ServerMessage, player: &str) -> bool {
    match message {
        ServerMessage::Voted { player: p, .. } => p == player,
        ServerMessage::Participants {
            leader,
            participants,
            joined,
            left,
            ..
        } => {
            leader == player
                || participants.iter().any(|p| p == player)
                || joined.as_deref() == Some(player)
                || left.as_deref() == Some(player)
        }
        ServerMessage::Chosen { votes, .. } => votes.iter().any(|v| v.player == player),
        ServerMessage::Opened {
            shared: Some(shared),
            ..
        } => {
            shared.leader == player
                || shared.participants.iter().any(|p| p == player)
                || shared.votes.iter().any(|v| v.player == player)
        }
        _ => false,
    }
}

/// Forms a party of `members` over the protocol (the first invites, each accepts the invitation
/// pushed to it); the party's id.
async fn form(members: &mut [Member]) -> Result<String> {
    let mut party = None;
    let (leader, others) = members
        .split_first_mut()
        .ok_or_else(|| SimError::Other("a party needs members".to_owned()))?;
    for other in others.iter_mut() {
        let reply = leader
            .honest(ClientMessage::PartyInvite {
                id: None,
                player: other.player(),
            })
            .await?;
        let id = reply.messages.iter().find_map(|m| match m {
            ServerMessage::Party { party: Some(p) } => Some(p.id.clone()),
            _ => None,
        });
        party = party.or(id);
        let invited = other
            .expect("its party_invited", |m| {
                matches!(m, ServerMessage::PartyInvited { .. })
            })
            .await?;
        let ServerMessage::PartyInvited { party: invited, .. } = invited else {
            return Err(SimError::Other("not an invitation".to_owned()));
        };
        other
            .honest(ClientMessage::PartyAccept {
                id: None,
                party: invited,
            })
            .await?;
    }
    party.ok_or_else(|| SimError::Other("party_invite was answered without the party".into()))
}

/// The first member talks to Wren; every other is taken into the shared conversation. Returns
/// once the first has heard that all of them are in.
async fn open_shared(members: &mut [Member], party: &str) -> Result<()> {
    let n = members.len();
    let (leader, others) = members
        .split_first_mut()
        .ok_or_else(|| SimError::Other("a party needs members".to_owned()))?;
    let reply = leader.talk_wren().await?;
    let shared = reply.messages.iter().find_map(|m| match m {
        ServerMessage::Opened { shared, .. } => shared.clone(),
        _ => None,
    });
    if reply.answer.is_err() || shared.as_ref().is_none_or(|s| s.party != party) {
        return Err(SimError::Other(format!(
            "the leader's talk did not open the party's shared conversation: {}, {shared:?}",
            outcome(&reply)
        )));
    }
    for other in others.iter_mut() {
        let opened = other.expect("`opened` (taken in)", is_opened).await?;
        match &opened {
            ServerMessage::Opened {
                shared: Some(s), ..
            } if s.party == party => {}
            _ => {
                return Err(SimError::Other(format!(
                    "a member was opened something else than the party's conversation: {opened:?}"
                )));
            }
        }
    }
    if n > 1 {
        leader
            .expect("every member in (`participants`)", |m| {
                matches!(m, ServerMessage::Participants { participants, .. } if participants.len() == n)
            })
            .await?;
    }
    Ok(())
}

/// `count` new players of a cheat `tag`, standing around Wren from `slot` on, in one party;
/// their party's id.
async fn party_at(
    options: &Arc<AttackOptions>,
    tag: &str,
    count: usize,
    slot: usize,
) -> Result<(Vec<Member>, String)> {
    let mut members = Vec::with_capacity(count);
    for k in 0..count {
        members.push(Member::at(options, &format!("{tag}-{k}"), slot + k).await?);
    }
    let party = form(&mut members).await?;
    Ok((members, party))
}

/// Each member votes `response`, in order, and every one of them hears the decision.
async fn all_vote(members: &mut [Member], response: &str) -> Result<()> {
    for member in members.iter_mut() {
        member.honest(choose(response)).await?;
    }
    for member in members.iter_mut() {
        member.expect("`chosen`", is_chosen).await?;
    }
    Ok(())
}

/// The facts afterwards, read back from the cheater after the others have closed.
async fn judged(cheater: &mut Member, others: &mut [Member]) -> Result<Snapshot> {
    for other in others.iter_mut() {
        let _ = other.send(ClientMessage::Close { id: None }).await;
    }
    cheater.facts_now().await
}

fn stuffing(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut members, party) = party_at(&options, "party-stuff", 2, 0).await?;
        open_shared(&mut members, &party).await?;
        let [mut a, mut b] = pair(members)?;
        let stuffer = b.player();
        let before = b.snapshot();
        let mut answers = Vec::new();
        for response in [SKIFF, SKIFF, SKIFF, BARGE, BARGE] {
            answers.push(outcome(&b.send(choose(response)).await?).to_string());
        }
        // One voter of two is never more than half: nothing may be decided.
        let early = a.wait(QUIET, is_chosen).await?.is_some() || b.saw(is_chosen);
        // The other agrees with the stuffer's latest vote: decided now, each voter once.
        a.honest(choose(BARGE)).await?;
        let chosen = a.wait(PROMPT, is_chosen).await?;
        let counted = match &chosen {
            Some(ServerMessage::Chosen {
                response, votes, ..
            }) => {
                let by_stuffer: Vec<&str> = votes
                    .iter()
                    .filter(|v| v.player == stuffer)
                    .map(|v| v.response.as_str())
                    .collect();
                response == BARGE && votes.len() == 2 && by_stuffer == [BARGE]
            }
            _ => false,
        };
        let held = !early && counted;
        let answered = if answers.iter().all(|a| a == "accepted") {
            "each accepted".to_owned()
        } else {
            answers.join(" ")
        };
        let seen = format!(
            "5 votes by one ({answered}); {}; {}",
            if early {
                "DECIDED by one voter".to_owned()
            } else {
                "no decision by them".to_owned()
            },
            match &chosen {
                Some(ServerMessage::Chosen {
                    response, votes, ..
                }) => format!(
                    "with the other's, {response} by {} vote(s){}",
                    votes.len(),
                    if counted {
                        ", its latest once"
                    } else {
                        " (NOT its latest once)"
                    }
                ),
                _ => "then NO decision".to_owned(),
            }
        );
        let after = judged(&mut b, std::slice::from_mut(&mut a)).await;
        Ok(Observed {
            got: Outcome::State { held, seen },
            before,
            after,
        })
    })
}

/// Two members, by value.
fn pair(members: Vec<Member>) -> Result<[Member; 2]> {
    members
        .try_into()
        .map_err(|_| SimError::Other("expected a party of two".to_owned()))
}

fn unshown_vote(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut members, party) = party_at(&options, "party-unshown", 2, 2).await?;
        open_shared(&mut members, &party).await?;
        let [mut a, mut b] = pair(members)?;
        let voter = b.player();
        let before = b.snapshot();
        let mut got = outcome(&b.send(choose(LAUNCH)).await?);
        // A vote that reached the ballot is through, whatever the answer said.
        tokio::time::sleep(Duration::from_millis(300)).await;
        if a.saw(|m| matches!(m, ServerMessage::Voted { player, .. } if *player == voter)) {
            got = Outcome::Accepted;
        }
        let after = judged(&mut b, std::slice::from_mut(&mut a)).await;
        Ok(Observed { got, before, after })
    })
}

fn outsider_talks(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut members, party) = party_at(&options, "party-outsider", 2, 4).await?;
        open_shared(&mut members, &party).await?;
        let mut c = Member::at(&options, "party-outsider-x", 6).await?;
        let outsider = c.player();
        let reply = c.talk_wren().await?;
        let own = reply.messages.iter().find_map(|m| match m {
            ServerMessage::Opened { shared, entry, .. } => Some((shared.clone(), entry.clone())),
            _ => None,
        });
        let before = c.snapshot();
        // In its own conversation, its pick is its own (accepted): the party must not hear it.
        let pick = match &own {
            Some((None, entry)) if entry == GREET => outcome(&c.send(choose(SKIFF)).await?),
            _ => Outcome::Failed("no own conversation".to_owned()),
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let heard = members.iter_mut().any(|m| m.saw(|x| names(x, &outsider)));
        // The party decides by its own two votes only.
        all_vote(&mut members, BARGE).await?;
        let decided_alone = !members.iter_mut().any(|m| m.saw(|x| names(x, &outsider)));
        let held =
            matches!(&own, Some((None, _))) && pick == Outcome::Accepted && !heard && decided_alone;
        let seen = format!(
            "talk {}: {}; its pick {}; the party {}",
            outcome(&reply),
            match &own {
                Some((None, entry)) => format!("own conversation on {entry}"),
                Some((Some(s), _)) => format!("SHARED with party {}", s.party),
                None => "nothing opened".to_owned(),
            },
            pick,
            if heard || !decided_alone {
                "HEARD of it"
            } else {
                "heard nothing of it"
            }
        );
        let after = judged(&mut c, &mut members).await;
        Ok(Observed {
            got: Outcome::State { held, seen },
            before,
            after,
        })
    })
}

fn outsider_votes(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut members, party) = party_at(&options, "party-ovote", 2, 7).await?;
        open_shared(&mut members, &party).await?;
        let mut c = Member::at(&options, "party-ovote-x", 9).await?;
        let outsider = c.player();
        let before = c.snapshot();
        let mut got = outcome(&c.send(choose(SKIFF)).await?);
        tokio::time::sleep(Duration::from_millis(300)).await;
        if members.iter_mut().any(|m| m.saw(|x| names(x, &outsider))) {
            got = Outcome::Accepted;
        }
        let after = judged(&mut c, &mut members).await;
        Ok(Observed { got, before, after })
    })
}

/// A party of two decides the barge; then the follower sends `cheat`.
fn after_the_boat(
    options: &Arc<AttackOptions>,
    tag: &'static str,
    slot: usize,
    cheat: ClientMessage,
) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut members, party) = party_at(&options, tag, 2, slot).await?;
        open_shared(&mut members, &party).await?;
        all_vote(&mut members, BARGE).await?;
        let [mut a, mut b] = pair(members)?;
        let before = b.snapshot();
        let got = outcome(&b.send(cheat).await?);
        let after = judged(&mut b, std::slice::from_mut(&mut a)).await;
        Ok(Observed { got, before, after })
    })
}

fn others_arming(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let a = Member::at(&options, "party-arming-0", 3).await?;
        // The other member waits out of Wren's reach (30 studs), so the talk does not take it in.
        let mut b = Member::new(&options, "party-arming-1").await?;
        let [x, y, z] = spot(&options, 3)?;
        b.p.walk_to([x, y, z + 30.0]).await?;
        let mut both = vec![a, b];
        let party = form(&mut both).await?;
        let [mut a, mut b] = pair(both)?;
        open_shared(std::slice::from_mut(&mut a), &party).await?;
        // Alone, the leader decides the barge (its AcceptQuest is armed for it, and left unsent)
        // and advances to the oars.
        a.honest(choose(BARGE)).await?;
        a.expect("`chosen`", is_chosen).await?;
        a.honest(advance(GREET_NEXT)).await?;
        // The other walks over and joins where the group is.
        b.p.walk_to(spot(&options, 5)?).await?;
        let joined = b.talk_wren().await?;
        let entry = joined.messages.iter().find_map(|m| match m {
            ServerMessage::Opened {
                entry,
                shared: Some(s),
                ..
            } if s.party == party => Some(entry.clone()),
            _ => None,
        });
        if entry.as_deref() != Some(ROWING) {
            return Err(SimError::Other(format!(
                "the late member did not join the party's conversation on {ROWING}: {}, {entry:?}",
                outcome(&joined)
            )));
        }
        let before = b.snapshot();
        let got = outcome(
            &b.send(action_message(ActionType::AcceptQuest, QUEST))
                .await?,
        );
        let after = judged(&mut b, std::slice::from_mut(&mut a)).await;
        Ok(Observed { got, before, after })
    })
}

/// How many times `member` was paid the ferry (its `quest_completed` effects kept).
fn payouts(member: &mut Member) -> usize {
    member.drain();
    member
        .inbox
        .iter()
        .filter(|m| {
            matches!(m, ServerMessage::Effect {
                effect: banter_protocol::Effect::QuestCompleted { quest, .. }, ..
            } if quest == QUEST)
        })
        .count()
}

fn leave_before_payout(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut members, party) = party_at(&options, "party-leaver", 3, 8).await?;
        open_shared(&mut members, &party).await?;
        let leaver_id = members
            .get(2)
            .map(Member::player)
            .ok_or_else(|| SimError::Other("a party of three".to_owned()))?;
        // The boat: two votes of three decide; every member accepts the quest for itself.
        for member in members.iter_mut().take(2) {
            member.honest(choose(SKIFF)).await?;
        }
        for member in members.iter_mut() {
            member.expect("`chosen`", is_chosen).await?;
            member
                .honest(action_message(ActionType::AcceptQuest, QUEST))
                .await?;
        }
        let [a, b, c] = &mut members[..] else {
            return Err(SimError::Other("a party of three".to_owned()));
        };
        a.honest(advance("Ferry_Skiff")).await?;
        for member in [&mut *b, &mut *c] {
            member
                .expect("`advanced`", |m| {
                    matches!(m, ServerMessage::Advanced { .. })
                })
                .await?;
        }
        // The oars: the leaver votes, then leaves the party before the group decides.
        c.honest(choose(ROW)).await?;
        let before = c.snapshot();
        let left = c.send(ClientMessage::PartyLeave { id: None }).await?;
        let left_answer = outcome(&left);
        a.expect(
            "the leaver gone (`participants`)",
            |m| matches!(m, ServerMessage::Participants { left: Some(l), .. } if *l == leaver_id),
        )
        .await?;
        // The two who stay ride on: the oars, the far bar's objective, the check, the payout.
        for member in [&mut *a, &mut *b] {
            member.honest(choose(ROW)).await?;
        }
        for member in [&mut *a, &mut *b] {
            member.expect("`chosen`", is_chosen).await?;
            member
                .honest(action_message(ActionType::AdvanceObjective, OBJECTIVE))
                .await?;
        }
        a.honest(advance(FAR_BAR)).await?;
        b.expect("`advanced`", |m| {
            matches!(m, ServerMessage::Advanced { .. })
        })
        .await?;
        for member in [&mut *a, &mut *b] {
            member.honest(choose(CHECK_HERE)).await?;
        }
        for member in [&mut *a, &mut *b] {
            member.expect("`chosen`", is_chosen).await?;
        }
        a.honest(action_message(ActionType::CheckQuest, CHECK))
            .await?;
        b.expect("the leader's `jump`", |m| {
            matches!(m, ServerMessage::Jump { .. })
        })
        .await?;
        b.honest(action_message(ActionType::CheckQuest, CHECK))
            .await?;
        for member in [&mut *a, &mut *b] {
            member
                .honest(action_message(ActionType::CompleteQuest, QUEST))
                .await?;
        }
        // Anything on its way to the leaver arrives meanwhile.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (paid_a, paid_b, paid_c) = (payouts(a), payouts(b), payouts(c));
        // The leaver's own late step pays nothing either: its conversation is gone.
        let late = outcome(
            &c.send(action_message(ActionType::AdvanceObjective, OBJECTIVE))
                .await?,
        );
        let held = left.answer.is_ok()
            && paid_a == 1
            && paid_b == 1
            && paid_c == 0
            && late != Outcome::Accepted;
        let seen = format!(
            "party_leave {left_answer}; the leaver paid {paid_c} time(s) (its late objective \
             {late}), the two who stayed {paid_a} and {paid_b}"
        );
        let mut members = members;
        let mut leaver = members
            .pop()
            .ok_or_else(|| SimError::Other("a party of three".to_owned()))?;
        let after = judged(&mut leaver, &mut members).await;
        Ok(Observed {
            got: Outcome::State { held, seen },
            before,
            after,
        })
    })
}

fn race(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut p, party_p) = party_at(&options, "party-race-p", 2, 0).await?;
        let (mut q, party_q) = party_at(&options, "party-race-q", 2, 6).await?;
        let p_players: Vec<String> = p.iter().map(Member::player).collect();
        let q_players: Vec<String> = q.iter().map(Member::player).collect();
        let before = p
            .first()
            .map(Member::snapshot)
            .ok_or_else(|| SimError::Other("a party of two".to_owned()))?;
        // Both leaders talk at the same instant.
        let (p_reply, q_reply) = {
            let (p0, q0) = match (p.first_mut(), q.first_mut()) {
                (Some(p0), Some(q0)) => (p0, q0),
                _ => return Err(SimError::Other("parties of two".to_owned())),
            };
            tokio::join!(p0.talk_wren(), q0.talk_wren())
        };
        let (p_reply, q_reply) = (p_reply?, q_reply?);
        let party_of = |reply: &Reply| {
            reply.messages.iter().find_map(|m| match m {
                ServerMessage::Opened {
                    shared: Some(s), ..
                } => Some(s.party.clone()),
                _ => None,
            })
        };
        let (p_open, q_open) = (party_of(&p_reply), party_of(&q_reply));
        let mut own = p_open.as_deref() == Some(party_p.as_str())
            && q_open.as_deref() == Some(party_q.as_str());
        for (members, party) in [(&mut p, &party_p), (&mut q, &party_q)] {
            if let Some(follower) = members.get_mut(1) {
                let opened = follower.expect("`opened` (taken in)", is_opened).await?;
                own &= matches!(&opened, ServerMessage::Opened { shared: Some(s), .. } if s.party == *party);
            }
        }
        // Each party decides its own boat.
        all_vote(&mut p, SKIFF).await?;
        all_vote(&mut q, BARGE).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let crossed = p
            .iter_mut()
            .any(|m| q_players.iter().any(|x| m.saw(|msg| names(msg, x))))
            || q.iter_mut()
                .any(|m| p_players.iter().any(|x| m.saw(|msg| names(msg, x))));
        let held = own && !crossed;
        let seen = format!(
            "{}; {}",
            if own {
                "two conversations, each its party's"
            } else {
                "NOT each party's own conversation"
            },
            if crossed {
                "CROSS-TALK"
            } else {
                "no cross-talk"
            }
        );
        let mut judge = p.remove(0);
        p.extend(q);
        let after = judged(&mut judge, &mut p).await;
        Ok(Observed {
            got: Outcome::State { held, seen },
            before,
            after,
        })
    })
}

fn other_instance(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let Some(second) = options.second_endpoint.clone() else {
            return Ok(Observed {
                got: Outcome::Skipped(
                    "needs a second instance (--second-endpoint; PostgreSQL)".to_owned(),
                ),
                before: ClientFacts::default().snapshot(),
                after: Err(SimError::Other("skipped".to_owned())),
            });
        };
        let elsewhere = Arc::new(AttackOptions {
            endpoint: second,
            ..(*options).clone()
        });
        let mut a = Member::at(&options, "party-instance-0", 11).await?;
        let mut b = Member::at(&elsewhere, "party-instance-1", 1).await?;
        // Invited on the first instance, accepted on the second (membership is stored; the
        // invitation is pushed only on the inviter's instance, so the id comes from the inviter).
        let reply = a
            .honest(ClientMessage::PartyInvite {
                id: None,
                player: b.player(),
            })
            .await?;
        let party = reply
            .messages
            .iter()
            .find_map(|m| match m {
                ServerMessage::Party { party: Some(p) } => Some(p.id.clone()),
                _ => None,
            })
            .ok_or_else(|| SimError::Other("party_invite answered without the party".into()))?;
        b.honest(ClientMessage::PartyAccept {
            id: None,
            party: party.clone(),
        })
        .await?;
        open_shared(std::slice::from_mut(&mut a), &party).await?;
        let before = b.snapshot();
        let reply = b.talk_wren().await?;
        let got = outcome(&reply);
        let after = judged(&mut b, std::slice::from_mut(&mut a)).await;
        Ok(Observed { got, before, after })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use banter_protocol::{PartyView, Vote};

    #[test]
    fn a_message_names_a_player_in_any_of_its_fields() {
        let vote = ServerMessage::Voted {
            player: "x".into(),
            response: SKIFF.into(),
        };
        assert!(names(&vote, "x"));
        assert!(!names(&vote, "y"));
        let chosen = ServerMessage::Chosen {
            line: GREET.into(),
            response: SKIFF.into(),
            node: None,
            by: banter_protocol::DecidedBy::Majority,
            votes: vec![Vote {
                player: "y".into(),
                response: SKIFF.into(),
            }],
            seed: None,
            rolls: Vec::new(),
        };
        assert!(names(&chosen, "y"));
        let roster = ServerMessage::Participants {
            leader: "a".into(),
            participants: vec!["a".into()],
            joined: None,
            left: Some("z".into()),
            reason: None,
        };
        assert!(names(&roster, "z") && names(&roster, "a") && !names(&roster, "b"));
        let party = ServerMessage::Party {
            party: Some(PartyView {
                id: "pty_1".into(),
                leader: "a".into(),
                members: vec!["a".into(), "x".into()],
            }),
        };
        assert!(
            !names(&party, "x"),
            "party news is the member's own, not the group's"
        );
    }

    #[test]
    fn a_sheet_naming_a_quest_available_says_what_its_absence_says() {
        let mut named = ClientFacts::default().snapshot();
        named.quests.insert(QUEST.into(), QuestStatus::Available);
        named.progress.insert(format!("{QUEST}/CrossTheShoals"), 0);
        assert_eq!(settled(named), settled(ClientFacts::default().snapshot()));
    }

    #[test]
    fn the_cheats_name_the_sample_ferry() {
        let content = crate::world::load_content(&crate::world::default_content_dir())
            .expect("the sample content");
        let graph = content.conversation("Wren").expect("Wren's conversation");
        for name in [
            GREET, SKIFF, BARGE, LAUNCH, ROWING, ROW, FAR_BAR, CHECK_HERE, GREET_NEXT,
        ] {
            assert!(graph.find(name).is_some(), "{name}");
        }
        assert!(content.npc(JUDGE).is_some() && content.quest(QUEST).is_some());
        let judge = content
            .npc(JUDGE)
            .map(|n| n.conversation.clone())
            .unwrap_or_default();
        assert!(
            content
                .conversation(&judge)
                .is_some_and(|g| g.shared().is_none()),
            "facts are read where nothing is shared"
        );
    }
}
