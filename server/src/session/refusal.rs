//! The one mapping from every domain error a session meets to the wire's error codes.
//!
//! Each error type (the frame checks, the walk, the world, the quest engine, the store and the
//! session's own) has exactly one `From` conversion into [`Refusal`] here; no call site picks a
//! code. The HTTP surface has its own single mapping into `ApiError` (`http.rs`). Internal
//! failures (a store or driver error, a content invariant broken at runtime) are logged with a
//! reference ([`crate::incident`]) and reach the client as a generic message carrying only it.

use banter_dialogue::WalkError;
use banter_protocol::{ErrorCode, ServerMessage};

use crate::quests::EngineError;
use crate::store::{MAX_PARTY_SIZE, StoreError};
use crate::world::WorldError;

/// A refused message: the code the client matches on and a message for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    /// The message is bounded ([`banter_protocol::bounded_message`]): a parser's text may quote
    /// what the client sent, and a client never gets back more than a short prefix of it.
    fn new(code: ErrorCode, message: impl Into<String>) -> Refusal {
        let message = message.into();
        let message = if message.len() <= banter_protocol::QUOTED_INPUT_CHARS {
            message
        } else {
            banter_protocol::bounded_message(&message)
        };
        Refusal { code, message }
    }

    /// Logs an internal failure and refuses with `internal` and the log's reference.
    fn internal(what: &str, error: &dyn std::fmt::Display) -> Refusal {
        let reference = crate::incident::report(what, error);
        Refusal::new(
            ErrorCode::Internal,
            format!("something went wrong on the server; nothing was applied (ref {reference})"),
        )
    }

    /// The `error` message a client gets for this refusal.
    pub fn to_message(&self, id: Option<u64>) -> ServerMessage {
        ServerMessage::Error {
            id,
            code: self.code,
            message: self.message.clone(),
            retryable: self.code.retryable(),
        }
    }
}

/// Why a frame was refused before it became a message (the frame layer).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("slow down")]
    RateLimited,
    #[error("binary frames are not part of the protocol")]
    BinaryFrame,
    #[error("frames are limited to {0} bytes")]
    TooLarge(usize),
    #[error("{0}")]
    Malformed(String),
}

/// A game-server channel's refusals of one player's item (PROTOCOL.md section 16.3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    #[error("this credential does not speak for `{0}`")]
    NotInScope(String),
    #[error("`{0}` is not on this channel; join first")]
    NotJoined(String),
    #[error("`{0}` is already on this channel")]
    AlreadyJoined(String),
    #[error("the channel carries {0} players already")]
    ChannelFull(usize),
    /// Another credential's channel carries the player's live session.
    #[error("a game server's channel carries `{0}`")]
    CarriedElsewhere(String),
}

impl From<crate::rooms::RoomError> for Refusal {
    fn from(e: crate::rooms::RoomError) -> Refusal {
        use crate::rooms::RoomError;
        let code = match e {
            RoomError::NoRoom | RoomError::NotParticipant => ErrorCode::NoConversation,
            RoomError::NotCurrent => ErrorCode::NotCurrent,
            RoomError::NotLeader => ErrorCode::NotLeader,
        };
        Refusal::new(code, e.to_string())
    }
}

impl From<ChannelError> for Refusal {
    fn from(e: ChannelError) -> Refusal {
        let code = match e {
            ChannelError::NotInScope(_) => ErrorCode::NotInScope,
            ChannelError::NotJoined(_) => ErrorCode::NotJoined,
            ChannelError::AlreadyJoined(_) => ErrorCode::AlreadyJoined,
            ChannelError::ChannelFull(_) => ErrorCode::ChannelFull,
            ChannelError::CarriedElsewhere(_) => ErrorCode::CarriedElsewhere,
        };
        Refusal::new(code, e.to_string())
    }
}

/// The session's own refusals: what the conversation and cutscene state allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("a conversation is already open")]
    ConversationOpen,
    #[error("no conversation is open")]
    NoConversation,
    #[error("no conversation `{0}`")]
    UnknownConversation(String),
    #[error("no node or response `{0}` in this conversation")]
    UnknownVertex(String),
    #[error("no cutscene `{0}` is playing")]
    NoCutscene(String),
    #[error("no conversation to resume with that token; talk again")]
    ResumeRefused,
    #[error("{0}")]
    BadLocale(banter_dialogue::locale::BadLocale),
    /// A `move` from a player a game server places (PROTOCOL.md section 16.4).
    #[error("the game server places this player: positions come from the engine")]
    PositionOwned,
    /// Content broken in a way the checks should have caught: an entry node missing from its
    /// graph, an armed action missing, a cutscene quest without a scene.
    #[error("content invariant broken: {0}")]
    Content(String),
}

impl From<FrameError> for Refusal {
    fn from(e: FrameError) -> Refusal {
        let code = match e {
            FrameError::RateLimited => ErrorCode::RateLimited,
            FrameError::BinaryFrame => ErrorCode::BinaryFrame,
            FrameError::TooLarge(_) => ErrorCode::FrameTooLarge,
            FrameError::Malformed(_) => ErrorCode::Malformed,
        };
        Refusal::new(code, e.to_string())
    }
}

impl From<SessionError> for Refusal {
    fn from(e: SessionError) -> Refusal {
        let code = match e {
            SessionError::ConversationOpen => ErrorCode::ConversationOpen,
            SessionError::NoConversation => ErrorCode::NoConversation,
            SessionError::UnknownConversation(_) => ErrorCode::UnknownConversation,
            SessionError::UnknownVertex(_) => ErrorCode::UnknownVertex,
            SessionError::NoCutscene(_) => ErrorCode::NoCutscene,
            SessionError::ResumeRefused => ErrorCode::ResumeRefused,
            SessionError::BadLocale(_) => ErrorCode::BadLocale,
            SessionError::PositionOwned => ErrorCode::PositionOwned,
            SessionError::Content(_) => return Refusal::internal("session", &e),
        };
        Refusal::new(code, e.to_string())
    }
}

/// The wire code a walk error is answered with (what a client walk's own refusal is called).
pub fn walk_code(e: &WalkError) -> &'static str {
    Refusal::from(*e).code.name()
}

impl From<WalkError> for Refusal {
    fn from(e: WalkError) -> Refusal {
        let code = match e {
            WalkError::UnknownVertex => ErrorCode::UnknownVertex,
            WalkError::NotReachable => ErrorCode::NotReachable,
            WalkError::NotALine => ErrorCode::NotALine,
            WalkError::NotAResponse => ErrorCode::NotAResponse,
            WalkError::AwaitsChoice => ErrorCode::AwaitsChoice,
            WalkError::AwaitsJump => ErrorCode::AwaitsJump,
            WalkError::ConditionFailed => ErrorCode::ConditionFailed,
            WalkError::ResponseDisabled => ErrorCode::ResponseDisabled,
            WalkError::NotArmed => ErrorCode::NotArmed,
            WalkError::PayloadMismatch => ErrorCode::PayloadMismatch,
            WalkError::Closed => ErrorCode::NoConversation,
            // A server-decided jump to something that is not a line: the content is broken.
            WalkError::BadJumpTarget => return Refusal::internal("walk", &e),
        };
        Refusal::new(code, e.to_string())
    }
}

impl From<WorldError> for Refusal {
    fn from(e: WorldError) -> Refusal {
        let code = match e {
            WorldError::NotFinite => ErrorCode::Malformed,
            WorldError::Teleport => ErrorCode::Teleport,
            WorldError::NoBody => ErrorCode::NoBody,
            WorldError::TooFar { .. } => ErrorCode::TooFar,
            WorldError::Busy(_) => ErrorCode::Busy,
            WorldError::UnknownNpc(_) => ErrorCode::UnknownNpc,
            WorldError::TalkCooldown(_) => ErrorCode::TalkCooldown,
        };
        Refusal::new(code, e.to_string())
    }
}

impl From<EngineError> for Refusal {
    fn from(e: EngineError) -> Refusal {
        match e {
            EngineError::QuestState(_) => Refusal::new(ErrorCode::QuestState, e.to_string()),
            EngineError::Store(store) => Refusal::from(store),
        }
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Refusal {
        match e {
            // The quest's state refused the change: the player's own business, said plainly.
            StoreError::QuestState { .. } | StoreError::AlreadyPaid { .. } => {
                Refusal::new(ErrorCode::QuestState, e.to_string())
            }
            StoreError::CarriedElsewhere(player) => ChannelError::CarriedElsewhere(player).into(),
            StoreError::Unavailable(_) => {
                let reference = crate::incident::report_outage("session", &e);
                Refusal::new(
                    ErrorCode::StoreUnavailable,
                    format!(
                        "the store is unavailable; nothing was applied, retry later (ref {reference})"
                    ),
                )
            }
            StoreError::OutcomeUnknown(_) => {
                let reference = crate::incident::report_outage("session", &e);
                Refusal::new(
                    ErrorCode::OutcomeUnknown,
                    format!(
                        "the database went away while committing; whether it took effect is not \
                         known yet: send the same message again (ref {reference})"
                    ),
                )
            }
            StoreError::StepApplied { .. }
            | StoreError::DuplicateEvent { .. }
            | StoreError::InvalidAmount { .. }
            | StoreError::InvalidInput(_)
            | StoreError::UnknownPlayer(_)
            | StoreError::Config(_)
            | StoreError::Migration(_)
            | StoreError::Corrupt(_)
            | StoreError::Database(_) => Refusal::internal("store", &e),
            StoreError::NotInParty | StoreError::NotAMember => Refusal::new(
                ErrorCode::NotInParty,
                "you are not in that party: form one with party_form or accept an invite",
            ),
            StoreError::AlreadyInParty => Refusal::new(
                ErrorCode::AlreadyInParty,
                "you are already in a party: leave it with party_leave first",
            ),
            StoreError::PartyFull => Refusal::new(
                ErrorCode::PartyFull,
                format!("that party already has {MAX_PARTY_SIZE} members"),
            ),
            StoreError::NoInvite => Refusal::new(
                ErrorCode::NoInvite,
                "there is no live invite to that party for you (invites last 10 minutes)",
            ),
            StoreError::SharedElsewhere { .. } => Refusal::new(
                ErrorCode::SharedElsewhere,
                "your party's conversation with this NPC is hosted on another instance; retry \
                 shortly or reconnect there",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::*;
    use crate::store::StoredQuestStatus;

    /// One value of every variant of every domain error, with the code it must map to.
    fn table() -> Vec<(String, Refusal, ErrorCode)> {
        let mut rows: Vec<(String, Refusal, ErrorCode)> = Vec::new();
        let mut row = |name: &str, refusal: Refusal, code: ErrorCode| {
            rows.push((name.to_owned(), refusal, code));
        };
        for (e, code) in [
            (FrameError::RateLimited, ErrorCode::RateLimited),
            (FrameError::BinaryFrame, ErrorCode::BinaryFrame),
            (FrameError::TooLarge(4096), ErrorCode::FrameTooLarge),
            (FrameError::Malformed("x".into()), ErrorCode::Malformed),
        ] {
            row(&format!("{e:?}"), e.into(), code);
        }
        for (e, code) in [
            (SessionError::ConversationOpen, ErrorCode::ConversationOpen),
            (SessionError::NoConversation, ErrorCode::NoConversation),
            (
                SessionError::UnknownConversation("c".into()),
                ErrorCode::UnknownConversation,
            ),
            (
                SessionError::UnknownVertex("n".into()),
                ErrorCode::UnknownVertex,
            ),
            (SessionError::NoCutscene("s".into()), ErrorCode::NoCutscene),
            (SessionError::ResumeRefused, ErrorCode::ResumeRefused),
            (
                SessionError::BadLocale(banter_dialogue::locale::BadLocale("x y".into())),
                ErrorCode::BadLocale,
            ),
            (SessionError::PositionOwned, ErrorCode::PositionOwned),
            (SessionError::Content("x".into()), ErrorCode::Internal),
        ] {
            row(&format!("{e:?}"), e.into(), code);
        }
        for (e, code) in [
            (ChannelError::NotInScope("p".into()), ErrorCode::NotInScope),
            (ChannelError::NotJoined("p".into()), ErrorCode::NotJoined),
            (
                ChannelError::AlreadyJoined("p".into()),
                ErrorCode::AlreadyJoined,
            ),
            (ChannelError::ChannelFull(1000), ErrorCode::ChannelFull),
            (
                ChannelError::CarriedElsewhere("p".into()),
                ErrorCode::CarriedElsewhere,
            ),
        ] {
            row(&format!("{e:?}"), e.into(), code);
        }
        for (e, code) in [
            (WalkError::UnknownVertex, ErrorCode::UnknownVertex),
            (WalkError::NotReachable, ErrorCode::NotReachable),
            (WalkError::NotALine, ErrorCode::NotALine),
            (WalkError::NotAResponse, ErrorCode::NotAResponse),
            (WalkError::AwaitsChoice, ErrorCode::AwaitsChoice),
            (WalkError::AwaitsJump, ErrorCode::AwaitsJump),
            (WalkError::ConditionFailed, ErrorCode::ConditionFailed),
            (WalkError::ResponseDisabled, ErrorCode::ResponseDisabled),
            (WalkError::NotArmed, ErrorCode::NotArmed),
            (WalkError::PayloadMismatch, ErrorCode::PayloadMismatch),
            (WalkError::Closed, ErrorCode::NoConversation),
            (WalkError::BadJumpTarget, ErrorCode::Internal),
        ] {
            row(&format!("{e:?}"), e.into(), code);
        }
        for (e, code) in [
            (WorldError::NotFinite, ErrorCode::Malformed),
            (WorldError::Teleport, ErrorCode::Teleport),
            (WorldError::NoBody, ErrorCode::NoBody),
            (
                WorldError::TooFar {
                    npc: "pim".into(),
                    distance: 20.0,
                    reach: 13.0,
                },
                ErrorCode::TooFar,
            ),
            (WorldError::Busy("Not during a cutscene."), ErrorCode::Busy),
            (WorldError::UnknownNpc("x".into()), ErrorCode::UnknownNpc),
            (
                WorldError::TalkCooldown(Duration::from_millis(1500)),
                ErrorCode::TalkCooldown,
            ),
        ] {
            row(&format!("{e:?}"), e.into(), code);
        }
        row(
            "EngineError::QuestState",
            EngineError::QuestState("q".into()).into(),
            ErrorCode::QuestState,
        );
        row(
            "EngineError::Store",
            EngineError::Store(StoreError::Unavailable("x".into())).into(),
            ErrorCode::StoreUnavailable,
        );
        for (e, code) in store_errors() {
            row(&format!("{e:?}"), e.into(), code);
        }
        use crate::rooms::RoomError;
        for (e, code) in [
            (RoomError::NoRoom, ErrorCode::NoConversation),
            (RoomError::NotParticipant, ErrorCode::NoConversation),
            (RoomError::NotCurrent, ErrorCode::NotCurrent),
            (RoomError::NotLeader, ErrorCode::NotLeader),
        ] {
            row(&format!("{e:?}"), e.into(), code);
        }
        rows
    }

    /// Every store error variant; the internal ones carry text that must never reach a client.
    fn store_errors() -> Vec<(StoreError, ErrorCode)> {
        vec![
            (
                StoreError::Unavailable(SECRET.into()),
                ErrorCode::StoreUnavailable,
            ),
            (
                StoreError::OutcomeUnknown(SECRET.into()),
                ErrorCode::OutcomeUnknown,
            ),
            (
                StoreError::StepApplied { key: SECRET.into() },
                ErrorCode::Internal,
            ),
            (
                StoreError::QuestState {
                    quest: "Q".into(),
                    found: Some(StoredQuestStatus::Completed),
                    expected: "active",
                },
                ErrorCode::QuestState,
            ),
            (
                StoreError::AlreadyPaid { quest: "Q".into() },
                ErrorCode::QuestState,
            ),
            (
                StoreError::DuplicateEvent {
                    event_id: SECRET.into(),
                },
                ErrorCode::Internal,
            ),
            (StoreError::InvalidAmount { amount: 0 }, ErrorCode::Internal),
            (StoreError::InvalidInput(SECRET.into()), ErrorCode::Internal),
            (
                StoreError::UnknownPlayer(SECRET.into()),
                ErrorCode::Internal,
            ),
            (StoreError::Config(SECRET.into()), ErrorCode::Internal),
            (StoreError::Migration(SECRET.into()), ErrorCode::Internal),
            (StoreError::Corrupt(SECRET.into()), ErrorCode::Internal),
            (StoreError::Database(SECRET.into()), ErrorCode::Internal),
            (StoreError::NotInParty, ErrorCode::NotInParty),
            (StoreError::NotAMember, ErrorCode::NotInParty),
            (StoreError::AlreadyInParty, ErrorCode::AlreadyInParty),
            (StoreError::PartyFull, ErrorCode::PartyFull),
            (StoreError::NoInvite, ErrorCode::NoInvite),
            (
                StoreError::SharedElsewhere {
                    instance: SECRET.into(),
                },
                ErrorCode::SharedElsewhere,
            ),
        ]
    }

    const SECRET: &str = "database i/o: expected to read 5 bytes, got 0 bytes at EOF";

    #[test]
    fn every_error_variant_maps_to_its_wire_code() {
        for (name, refusal, code) in table() {
            assert_eq!(refusal.code, code, "{name}");
        }
    }

    #[test]
    fn no_store_or_driver_text_reaches_a_refusal() {
        for (e, _) in store_errors() {
            let refusal = Refusal::from(e.clone());
            assert!(
                !refusal.message.contains(SECRET),
                "{e:?} leaked: {}",
                refusal.message
            );
            if matches!(
                refusal.code,
                ErrorCode::Internal | ErrorCode::StoreUnavailable | ErrorCode::OutcomeUnknown
            ) {
                assert!(refusal.message.contains("(ref "), "{}", refusal.message);
            }
        }
    }

    /// The codes docs/PROTOCOL.md section 7 lists, in its table's first column.
    fn documented_codes() -> BTreeSet<String> {
        let doc = include_str!("../../../docs/PROTOCOL.md");
        let start = doc.find("## 7. Error codes").expect("section 7");
        let section = &doc[start..];
        let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
        section[..end]
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split('`').next())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_codes_produced_are_exactly_the_codes_protocol_md_section_7_lists() {
        let produced: BTreeSet<String> = table()
            .into_iter()
            .map(|(_, _, code)| code.name().to_owned())
            .collect();
        let all: BTreeSet<String> = ErrorCode::ALL.iter().map(|c| c.name().to_owned()).collect();
        assert_eq!(
            produced, all,
            "every wire code has a domain error behind it"
        );
        assert_eq!(
            documented_codes(),
            all,
            "PROTOCOL.md section 7 lists every code"
        );
    }
}
