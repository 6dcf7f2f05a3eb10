//! Availability (section 3): the sets entry by entry, the four predicates, interruptions and
//! the level-triggered menu-hold bridge.

// Tests may unwrap: every value here is built by the test itself.
#![allow(clippy::unwrap_used)]

mod common;

use banter_player::availability::{
    self, C, HoldChange, I, INTERRUPTIONS, MenuHoldBridge, SCREEN_TAKEOVERS, SHOWN_SOMETHING, T,
    barks_may_play, interruption, menus_may_open, other_players_drawn, world_prompts_drawn,
};
use banter_player::{
    Availability, DialogueState, PlayerStateMachine, State, StealState, StoryState, Tag,
};
use common::{all_configurations, enter, leave, machine_with};

/// The article's lists, written out per state: (state, in C, in I, in T).
const TABLE: [(&str, bool, bool, bool); 11] = [
    ("Foot.Walking", false, false, false),
    ("Boat.Driving", false, false, false),
    ("Fishing.Charging", false, false, false),
    ("Fishing.Casted", false, false, false),
    ("Fishing.Minigame", false, false, true),
    ("Fishing.Cooldown", false, false, false),
    ("Steal.Stealing", false, true, false),
    ("Steal.Victim", false, true, false),
    ("Dialogue.Talking", true, true, true),
    ("Story.Cutscene", true, true, true),
    ("Story.IslandTour", true, true, true),
];

fn state(name: &str) -> State {
    name.parse().unwrap()
}

const CUTSCENE: State = State::Story(StoryState::Cutscene);
const TALKING: State = State::Dialogue(DialogueState::Talking);
const STEALING: State = State::Steal(StealState::Stealing);

#[test]
fn the_table_covers_every_state() {
    let names: Vec<&str> = TABLE.iter().map(|row| row.0).collect();
    let all: Vec<&str> = State::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(names, all);
}

#[test]
fn sets_match_the_article_entry_by_entry() {
    for (name, in_c, in_i, in_t) in TABLE {
        let s = state(name);
        assert_eq!(SHOWN_SOMETHING.contains(&s), in_c, "C and {name}");
        assert_eq!(INTERRUPTIONS.contains(&s), in_i, "I and {name}");
        assert_eq!(SCREEN_TAKEOVERS.contains(&s), in_t, "T and {name}");
    }
    // The letters are the same sets, and the unions hold: I = C ∪ {Steal.*}, T = C ∪ {Minigame}.
    assert_eq!(
        (C, I, T),
        (SHOWN_SOMETHING, INTERRUPTIONS, SCREEN_TAKEOVERS)
    );
    assert!(C.iter().all(|s| I.contains(s) && T.contains(s)));
    assert_eq!(I.len(), C.len() + 2);
    assert_eq!(T.len(), C.len() + 1);
}

#[test]
fn each_state_alone_against_each_predicate() {
    for (name, in_c, in_i, in_t) in TABLE {
        let (m, _h) = machine_with(&[state(name)]);
        assert_eq!(barks_may_play(&m), !in_i, "barks during {name}");
        assert_eq!(menus_may_open(&m), !in_i, "menus during {name}");
        assert_eq!(world_prompts_drawn(&m), !in_t, "prompts during {name}");
        assert_eq!(other_players_drawn(&m), !in_c, "players during {name}");
        assert_eq!(
            interruption(&m).map(|i| i.state()),
            in_i.then(|| state(name))
        );
    }
}

#[test]
fn idle_is_available_for_everything() {
    let (m, _h) = PlayerStateMachine::new();
    assert_eq!(
        Availability::of(&m),
        Availability {
            barks_may_play: true,
            menus_may_open: true,
            world_prompts_drawn: true,
            other_players_drawn: true,
        }
    );
}

#[test]
fn menu_and_microphone_silence_barks_only() {
    let (mut m, h) = PlayerStateMachine::new();
    h.tags.menu_open.set(&mut m, true);
    assert!(!barks_may_play(&m));
    assert!(menus_may_open(&m) && world_prompts_drawn(&m) && other_players_drawn(&m));
    h.tags.menu_open.set(&mut m, false);

    h.tags.using_microphone.set(&mut m, true);
    assert!(!barks_may_play(&m));
    // "it doesn't stop anyone from opening their inventory".
    assert!(menus_may_open(&m) && world_prompts_drawn(&m) && other_players_drawn(&m));
    h.tags.using_microphone.set(&mut m, false);

    // No other tag matters.
    h.tags.afk.set(&mut m, true);
    h.tags.night.set(&mut m, true);
    h.tags.sprinting.set(&mut m, true);
    assert!(barks_may_play(&m));
}

#[test]
fn predicates_hold_in_every_configuration_with_every_relevant_tag() {
    for config in all_configurations() {
        for (menu, mic) in [(false, false), (true, false), (false, true), (true, true)] {
            let (mut m, h) = machine_with(&config);
            h.tags.menu_open.set(&mut m, menu);
            h.tags.using_microphone.set(&mut m, mic);
            let any = |set: &[State]| config.iter().any(|s| set.contains(s));
            let a = Availability::of(&m);
            assert_eq!(a.barks_may_play, !any(&I) && !menu && !mic, "{config:?}");
            assert_eq!(a.menus_may_open, !any(&I), "{config:?}");
            assert_eq!(a.world_prompts_drawn, !any(&T), "{config:?}");
            assert_eq!(a.other_players_drawn, !any(&C), "{config:?}");
        }
    }
}

#[test]
fn a_theft_does_not_hide_other_players() {
    let (m, _h) = machine_with(&[STEALING]);
    assert!(other_players_drawn(&m));
    assert!(!menus_may_open(&m));
}

#[test]
fn interruption_is_the_heaviest_held_with_its_message() {
    let msg = |states: &[State]| interruption(&machine_with(states).0).map(|i| i.message());
    assert_eq!(msg(&[]), None);
    assert_eq!(msg(&[state("Fishing.Minigame")]), None);
    assert_eq!(msg(&[CUTSCENE]), Some("Not during a cutscene."));
    assert_eq!(msg(&[TALKING]), Some("Not during a conversation."));
    assert_eq!(msg(&[STEALING]), Some("Not while stealing."));
    assert_eq!(
        msg(&[state("Steal.Victim")]),
        Some("Not while being robbed.")
    );
    assert_eq!(
        msg(&[state("Story.IslandTour")]),
        Some("Not during the island tour.")
    );
    assert_eq!(
        msg(&[STEALING, TALKING, CUTSCENE]),
        Some("Not during a cutscene.")
    );
    assert_eq!(
        msg(&[STEALING, TALKING]),
        Some("Not during a conversation.")
    );
    // Every interruption has its own message.
    let messages: std::collections::HashSet<_> = I
        .iter()
        .map(|&s| interruption(&machine_with(&[s]).0).unwrap().message())
        .collect();
    assert_eq!(messages.len(), I.len());
    assert!(!messages.contains("Not right now."));
    assert_eq!(
        availability::heaviest_held(&machine_with(&[STEALING, TALKING]).0, &C),
        Some(TALKING)
    );
}

#[test]
fn bridge_refresh_is_idempotent() {
    let (mut m, mut h) = split();
    let mut bridge = MenuHoldBridge::new(h.take_menu_open());
    assert_eq!(bridge.refresh(&m), None);
    assert_eq!(bridge.hold(), None);

    enter(&mut m, &h.owners, CUTSCENE);
    let change = bridge.refresh(&m).unwrap();
    assert_eq!(change.from, None);
    assert_eq!(change.to.map(|i| i.state()), Some(CUTSCENE));
    // Hearing the same change twice (StateChanged then TagChanged) costs nothing.
    assert_eq!(bridge.refresh(&m), None);
    assert_eq!(bridge.refresh(&m), None);
    assert_eq!(
        bridge.hold().map(|i| i.message()),
        Some("Not during a cutscene.")
    );
}

#[test]
fn bridge_recovers_from_missed_events() {
    let (mut m, mut h) = split();
    let mut bridge = MenuHoldBridge::new(h.take_menu_open());
    enter(&mut m, &h.owners, CUTSCENE);
    bridge.refresh(&m);

    // Events missed: the cutscene ends and a conversation starts, nobody refreshes.
    leave(&mut m, &h.owners, CUTSCENE);
    enter(&mut m, &h.owners, TALKING);
    let change = bridge.refresh(&m).unwrap();
    assert_eq!(change.from.map(|i| i.state()), Some(CUTSCENE));
    assert_eq!(change.to.map(|i| i.state()), Some(TALKING));
    assert_eq!(
        bridge.hold().unwrap().message(),
        "Not during a conversation."
    );

    // Every exit missed: the next refresh unlocks menus instead of leaving them locked for
    // the rest of the session.
    leave(&mut m, &h.owners, TALKING);
    enter(&mut m, &h.owners, STEALING);
    leave(&mut m, &h.owners, STEALING);
    assert_eq!(
        bridge
            .refresh(&m)
            .map(|c| (c.from.map(|i| i.state()), c.to)),
        Some((Some(TALKING), None))
    );
    assert!(menus_may_open(&m));
}

/// Owner handles plus the MenuOpen handle, which the bridge takes by value.
struct Handles {
    owners: banter_player::OwnerHandles,
}

impl Handles {
    fn take_menu_open(&mut self) -> banter_player::TagHandle<banter_player::tag::MenuOpen> {
        // Swap in the MenuOpen handle of a throwaway machine so `owners` stays whole; a
        // test-only convenience (handles are not tied to a machine value).
        let (_, spare) = PlayerStateMachine::new();
        core::mem::replace(&mut self.owners.tags.menu_open, spare.tags.menu_open)
    }
}

fn split() -> (PlayerStateMachine, Handles) {
    let (m, owners) = PlayerStateMachine::new();
    (m, Handles { owners })
}

fn permutations(items: &[State]) -> Vec<Vec<State>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first);
            out.push(p);
        }
    }
    out
}

#[test]
fn overlapping_cutscene_dialogue_and_theft_tear_down_in_any_order() {
    let overlapping = [CUTSCENE, TALKING, STEALING];
    for enters in permutations(&overlapping) {
        for exits in permutations(&overlapping) {
            // Refresh after every step, and also with every other refresh missed.
            for refresh_every in [1, 2] {
                let (mut m, mut h) = split();
                let mut bridge = MenuHoldBridge::new(h.take_menu_open());
                let steps = enters
                    .iter()
                    .map(|s| (true, *s))
                    .chain(exits.iter().map(|s| (false, *s)));
                for (i, (entering, s)) in steps.enumerate() {
                    if entering {
                        enter(&mut m, &h.owners, s);
                    } else {
                        leave(&mut m, &h.owners, s);
                    }
                    if i % refresh_every == 0 {
                        bridge.refresh(&m);
                        assert_eq!(bridge.hold(), interruption(&m));
                        // Twice is free.
                        assert_eq!(bridge.refresh(&m), None);
                    }
                }
                bridge.refresh(&m);
                assert_eq!(bridge.hold(), None, "{enters:?} then {exits:?}");
                assert!(menus_may_open(&m));
            }
        }
    }
}

#[test]
fn cutscene_over_dialogue_changes_the_message_as_each_ends() {
    let (mut m, mut h) = split();
    let mut bridge = MenuHoldBridge::new(h.take_menu_open());
    enter(&mut m, &h.owners, TALKING);
    enter(&mut m, &h.owners, CUTSCENE);
    bridge.refresh(&m);
    assert_eq!(bridge.hold().unwrap().to_string(), "Not during a cutscene.");
    leave(&mut m, &h.owners, CUTSCENE);
    let change: HoldChange = bridge.refresh(&m).unwrap();
    assert_eq!(change.to.unwrap().message(), "Not during a conversation.");
    leave(&mut m, &h.owners, TALKING);
    assert_eq!(bridge.refresh(&m).unwrap().to, None);
}

#[test]
fn bridge_reflects_a_stacked_menu_into_the_menu_open_tag() {
    let (mut m, mut h) = split();
    let mut bridge = MenuHoldBridge::new(h.take_menu_open());
    let rev = m.revision();
    assert!(bridge.set_menu_stacked(&mut m, true).is_some());
    assert!(m.tag(Tag::MenuOpen));
    assert!(!barks_may_play(&m));
    // Level-triggered: the same input again changes nothing.
    assert_eq!(bridge.set_menu_stacked(&mut m, true), None);
    assert_eq!(m.revision(), rev + 1);
    // A menu on screen is not a hold on menus.
    assert_eq!(bridge.refresh(&m), None);
    assert!(bridge.set_menu_stacked(&mut m, false).is_some());
    assert!(barks_may_play(&m));
    assert_eq!(MenuHoldBridge::HOLD_NAME, "PlayerAvailability");
    let handle = bridge.into_handle();
    assert_eq!(handle.tag(), Tag::MenuOpen);
}
