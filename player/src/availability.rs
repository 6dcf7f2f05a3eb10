//! One definition of "busy" (the article's PlayerAvailability).
//!
//! Barks, menus, world prompts and the rendering of other players all need to know whether
//! the player is busy. "Written twice, those lists drift", so they are defined once here, as
//! sets of states and predicates over the machine. The module "reads the machine and nothing
//! else": it doesn't know what a cutscene is, only that `Story.Cutscene` is held, so adding a
//! new interruption means declaring a state and listing it here. The server uses the same
//! functions for its own authoritative checks (e.g. refusing to start a conversation during a
//! cutscene, see [`interruption`]).

use core::fmt;

use crate::machine::{PlayerStateMachine, TagChange, TagHandle, outranks};
use crate::vocabulary::{DialogueState, FishingState, State, StealState, StoryState, Tag, tag};

/// C: the states where the player is being shown something.
pub const SHOWN_SOMETHING: [State; 3] = [
    State::Story(StoryState::Cutscene),
    State::Story(StoryState::IslandTour),
    State::Dialogue(DialogueState::Talking),
];

/// I = C ∪ {Steal.Stealing, Steal.Victim}: the interruptions.
pub const INTERRUPTIONS: [State; 5] = [
    SHOWN_SOMETHING[0],
    SHOWN_SOMETHING[1],
    SHOWN_SOMETHING[2],
    State::Steal(StealState::Stealing),
    State::Steal(StealState::Victim),
];

/// T = C ∪ {Fishing.Minigame}: the states where something takes over the whole screen.
pub const SCREEN_TAKEOVERS: [State; 4] = [
    SHOWN_SOMETHING[0],
    SHOWN_SOMETHING[1],
    SHOWN_SOMETHING[2],
    State::Fishing(FishingState::Minigame),
];

/// The article's letter for [`SHOWN_SOMETHING`].
pub const C: [State; 3] = SHOWN_SOMETHING;
/// The article's letter for [`INTERRUPTIONS`].
pub const I: [State; 5] = INTERRUPTIONS;
/// The article's letter for [`SCREEN_TAKEOVERS`].
pub const T: [State; 4] = SCREEN_TAKEOVERS;

/// Whether any state of `set` is held.
pub fn holds_any(m: &PlayerStateMachine, set: &[State]) -> bool {
    set.iter().any(|&s| m.is_state_active(s))
}

/// The heaviest held state of `set` (same ranking as the effective state: weight, then
/// name), or `None` if none is held.
pub fn heaviest_held(m: &PlayerStateMachine, set: &[State]) -> Option<State> {
    let mut best: Option<State> = None;
    for &s in set.iter().filter(|&&s| m.is_state_active(s)) {
        best = match best {
            Some(b) if !outranks(s, b, State::weight) => Some(b),
            _ => Some(s),
        };
    }
    best
}

/// Barks may play if no state in I is held, no menu is open and the microphone isn't live.
///
/// "A live microphone silences X because the player is in a real conversation, and a
/// subtitle appearing on top would be the game talking over a person."
pub fn barks_may_play(m: &PlayerStateMachine) -> bool {
    !holds_any(m, &INTERRUPTIONS) && !m.tag(Tag::MenuOpen) && !m.tag(Tag::UsingMicrophone)
}

/// Menus may open if no state in I is held. The microphone does not matter: it "doesn't stop
/// anyone from opening their inventory".
pub fn menus_may_open(m: &PlayerStateMachine) -> bool {
    !holds_any(m, &INTERRUPTIONS)
}

/// World prompts are drawn if no state in T is held, "because during the minigame their key
/// would compete with the dial's".
pub fn world_prompts_drawn(m: &PlayerStateMachine) -> bool {
    !holds_any(m, &SCREEN_TAKEOVERS)
}

/// Other players are drawn if no state in C is held. A theft doesn't hide them, "because
/// hiding them would hide the person you are chasing".
pub fn other_players_drawn(m: &PlayerStateMachine) -> bool {
    !holds_any(m, &SHOWN_SOMETHING)
}

/// The heaviest held interruption (a state in I), if any, with its player-facing message.
///
/// This is what the server checks before starting something the player must be free for:
/// `if let Some(busy) = interruption(&m) { refuse(busy.message()) }`.
pub fn interruption(m: &PlayerStateMachine) -> Option<Interruption> {
    heaviest_held(m, &INTERRUPTIONS).map(|state| Interruption { state })
}

/// All four answers at once, for callers that want a single value to compare or log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Availability {
    /// [`barks_may_play`].
    pub barks_may_play: bool,
    /// [`menus_may_open`].
    pub menus_may_open: bool,
    /// [`world_prompts_drawn`].
    pub world_prompts_drawn: bool,
    /// [`other_players_drawn`].
    pub other_players_drawn: bool,
}

impl Availability {
    /// Evaluates every predicate on `m`.
    pub fn of(m: &PlayerStateMachine) -> Availability {
        Availability {
            barks_may_play: barks_may_play(m),
            menus_may_open: menus_may_open(m),
            world_prompts_drawn: world_prompts_drawn(m),
            other_players_drawn: other_players_drawn(m),
        }
    }
}

/// A held state from I: the reason the player is busy.
///
/// Only [`interruption`] and the bridge create it, so `state` is always in I.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interruption {
    state: State,
}

impl Interruption {
    /// The held state that interrupts.
    pub fn state(&self) -> State {
        self.state
    }

    /// The player-facing message for a refused action, e.g. "Not during a cutscene.".
    pub fn message(&self) -> &'static str {
        match self.state {
            State::Story(StoryState::Cutscene) => "Not during a cutscene.",
            State::Story(StoryState::IslandTour) => "Not during the island tour.",
            State::Dialogue(DialogueState::Talking) => "Not during a conversation.",
            State::Steal(StealState::Stealing) => "Not while stealing.",
            State::Steal(StealState::Victim) => "Not while being robbed.",
            // Unreachable: an Interruption only ever holds a state in I.
            State::Foot(_) | State::Boat(_) | State::Fishing(_) => "Not right now.",
        }
    }
}

impl fmt::Display for Interruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// The menu hold moved: it appeared, went away, or changed cause (and so message).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HoldChange {
    /// The hold before the refresh.
    pub from: Option<Interruption>,
    /// The hold after the refresh.
    pub to: Option<Interruption>,
}

/// The level-triggered bridge between the machine and a menu library (the article's
/// PrettyStateBridge).
///
/// It connects them in both directions: a held interruption becomes a named hold on menus,
/// with a message for the player, and a stacked menu on screen becomes the `MenuOpen` tag.
/// The hold is recomputed from scratch on every [`refresh`](Self::refresh)
/// (hold(t) = f(σ(t))) instead of being maintained from enter and exit events, because
/// "cutscenes, dialogues and thefts overlap and have teardown paths that fire in any order":
/// a missed event is corrected by the next refresh instead of "leaving menus locked for the
/// rest of the session", and hearing the same change twice (once through a state change and
/// once through a tag change) costs nothing.
///
/// It holds the [`TagHandle`] for `MenuOpen`, so it is the tag's only writer.
#[derive(Debug)]
pub struct MenuHoldBridge {
    menu_open: TagHandle<tag::MenuOpen>,
    hold: Option<Interruption>,
}

impl MenuHoldBridge {
    /// The name under which the bridge holds menus in the menu library.
    pub const HOLD_NAME: &'static str = "PlayerAvailability";

    /// A bridge with no hold yet; call [`refresh`](Self::refresh) to pick up the machine's
    /// current state.
    pub fn new(menu_open: TagHandle<tag::MenuOpen>) -> MenuHoldBridge {
        MenuHoldBridge {
            menu_open,
            hold: None,
        }
    }

    /// The current hold on menus, as of the last refresh. `None` means menus may open.
    pub fn hold(&self) -> Option<Interruption> {
        self.hold
    }

    /// Recomputes the hold from the machine. Returns the change, or `None` if the hold (cause
    /// included) is what it already was.
    pub fn refresh(&mut self, m: &PlayerStateMachine) -> Option<HoldChange> {
        let to = interruption(m);
        let from = self.hold;
        if from == to {
            return None;
        }
        self.hold = to;
        Some(HoldChange { from, to })
    }

    /// Reflects the menu library's "a menu is stacked on screen" into the `MenuOpen` tag.
    /// Level-triggered too: pass the current value, repeats are free.
    pub fn set_menu_stacked(&self, m: &mut PlayerStateMachine, stacked: bool) -> Option<TagChange> {
        self.menu_open.set(m, stacked)
    }

    /// Gives the `MenuOpen` writer back, e.g. when the UI is torn down.
    pub fn into_handle(self) -> TagHandle<tag::MenuOpen> {
        self.menu_open
    }
}
