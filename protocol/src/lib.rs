//! The Banter wire protocol: what crosses the network between a game client and the server.
//!
//! This crate is shared by the server and by every client so that both sides build the very same
//! bytes. The most important piece is [`ActionPayload`]: the server accepts a client's action only
//! if its payload equals the payload built from the action authored in the dialogue, so the
//! comparison is only worth anything if both sides build it with the same function.
//!
//! Pure: no I/O, no clock, no async runtime.

mod action;
pub mod channel;
mod hot_decode;
mod hot_encode;
mod messages;
pub mod party;
mod payload;
pub mod schema;

pub use action::{
    ACTION_SPECS, Action, ActionField, ActionSpec, ActionType, FieldKind, FieldRef, FieldSpec,
    FieldValue, ObjectiveAmount, Placement, UnknownActionType, actions_json,
};
pub use messages::{
    ByeReason, ClientMessage, ClientMessageKind, CloseReason, Effect, ErrorCode, FactSheet,
    MAX_CLIENT_FRAME_BYTES, NpcRef, PROTOCOL_VERSION, Position, Profile, QuestStatus,
    ServerMessage, VarValue,
};
pub use party::{
    ChoiceMode, DecidedBy, DeclaredParty, InviteView, LeftReason, MAX_PARTY_SIZE, PartyView, Roll,
    SharedView, TieRule, Vote,
};
pub use payload::{ActionPayload, ExpectedFields, PayloadError};

/// A closed vocabulary's `VARIANTS` (strum's derive, in declaration order) as the array its `ALL`
/// has always been: `N` is the enum's `COUNT`, so a mismatch cannot compile.
const fn all<T: Copy, const N: usize>(variants: &[T]) -> [T; N] {
    match variants.first_chunk::<N>() {
        Some(all) => *all,
        None => panic!("COUNT and VARIANTS disagree"),
    }
}

/// The most characters of a client's input an error message quotes.
pub const QUOTED_INPUT_CHARS: usize = 64;

/// The most characters of an error's `message` sent to a client (a WebSocket `error`, or an
/// HTTP error body's `message` when it reports a request the server could not read).
pub const MAX_ERROR_MESSAGE_CHARS: usize = 256;

/// What an error message may quote of a client's input: at most [`QUOTED_INPUT_CHARS`]
/// characters, cut on a character boundary, with `…` when cut. Every error that echoes input (a
/// name, a tag, a file) goes through it, so a message stays short whatever was sent.
pub fn quoted_input(input: &str) -> String {
    cut(input, QUOTED_INPUT_CHARS)
}

/// An error message as a client gets it: each part quoted in backticks (a name, a field, a
/// variant: what the client sent) and each run of characters without a space cut to
/// [`QUOTED_INPUT_CHARS`] characters, then the whole to [`MAX_ERROR_MESSAGE_CHARS`] (each cut
/// marked `…`), whatever a parser's own message quoted of the input and however.
pub fn bounded_message(message: &str) -> String {
    let quoted_short = message
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                quoted_input(part)
            } else {
                part.split(' ')
                    .map(quoted_input)
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        })
        .collect::<Vec<_>>()
        .join("`");
    cut(&quoted_short, MAX_ERROR_MESSAGE_CHARS)
}

fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_input_is_bounded_and_cut_on_a_character() {
        assert_eq!(quoted_input("short"), "short");
        let exact = "a".repeat(QUOTED_INPUT_CHARS);
        assert_eq!(quoted_input(&exact), exact);
        let long = "é".repeat(1000);
        let quoted = quoted_input(&long);
        assert_eq!(quoted.chars().count(), QUOTED_INPUT_CHARS + 1);
        assert!(quoted.ends_with('…'));
        let message = bounded_message(&"x ".repeat(2500));
        assert_eq!(message.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1);
        assert_eq!(bounded_message("short"), "short");
        let name = "n".repeat(500);
        let message = bounded_message(&format!("no NPC named `{name}`, sorry"));
        assert_eq!(
            message,
            format!("no NPC named `{}…`, sorry", &name[..QUOTED_INPUT_CHARS])
        );
        assert_eq!(bounded_message("an `open quote"), "an `open quote");
        let message = bounded_message(&format!("{name}: unknown field"));
        assert_eq!(
            message,
            format!("{}… unknown field", &name[..QUOTED_INPUT_CHARS])
        );
    }
}
