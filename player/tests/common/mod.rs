//! Helpers shared by the integration tests.
#![allow(dead_code)]

use banter_player::{Owner, OwnerHandles, PlayerStateMachine, State, StateChanged};

/// Enters any state through the handle of its owner: the way a test drives every region
/// without listing six handles at each call site.
pub fn enter(m: &mut PlayerStateMachine, h: &OwnerHandles, s: State) -> Option<StateChanged> {
    match s {
        State::Foot(x) => h.foot.enter(m, x),
        State::Boat(x) => h.boat.enter(m, x),
        State::Fishing(x) => h.fishing.enter(m, x),
        State::Steal(x) => h.steal.enter(m, x),
        State::Dialogue(x) => h.dialogue.enter(m, x),
        State::Story(x) => h.story.enter(m, x),
    }
}

/// Leaves any state through the handle of its owner.
pub fn leave(m: &mut PlayerStateMachine, h: &OwnerHandles, s: State) -> Option<StateChanged> {
    match s {
        State::Foot(x) => h.foot.leave(m, x),
        State::Boat(x) => h.boat.leave(m, x),
        State::Fishing(x) => h.fishing.leave(m, x),
        State::Steal(x) => h.steal.leave(m, x),
        State::Dialogue(x) => h.dialogue.leave(m, x),
        State::Story(x) => h.story.leave(m, x),
    }
}

/// Clears any owner through its handle.
pub fn clear(m: &mut PlayerStateMachine, h: &OwnerHandles, o: Owner) -> Option<StateChanged> {
    match o {
        Owner::Foot => h.foot.clear(m),
        Owner::Boat => h.boat.clear(m),
        Owner::Fishing => h.fishing.clear(m),
        Owner::Steal => h.steal.clear(m),
        Owner::Dialogue => h.dialogue.clear(m),
        Owner::Story => h.story.clear(m),
    }
}

/// Every configuration σ = (σ_o): each owner holds ⊥ or one of its states.
pub fn all_configurations() -> Vec<Vec<State>> {
    let mut configs: Vec<Vec<State>> = vec![Vec::new()];
    for owner in Owner::ALL {
        let options: Vec<Option<State>> = std::iter::once(None)
            .chain(
                State::ALL
                    .into_iter()
                    .filter(|s| s.owner() == owner)
                    .map(Some),
            )
            .collect();
        configs = configs
            .into_iter()
            .flat_map(|c| {
                options.iter().map(move |o| {
                    let mut c = c.clone();
                    c.extend(*o);
                    c
                })
            })
            .collect();
    }
    configs
}

/// A fresh machine holding exactly `states`, plus its handles.
pub fn machine_with(states: &[State]) -> (PlayerStateMachine, OwnerHandles) {
    let (mut m, h) = PlayerStateMachine::new();
    for &s in states {
        enter(&mut m, &h, s);
    }
    (m, h)
}
