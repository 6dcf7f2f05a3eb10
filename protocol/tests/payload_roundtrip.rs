//! Property tests: the payload encoding is a bijection between actions and canonical strings.

use banter_protocol::{Action, ActionPayload, ActionType, ObjectiveAmount};
use proptest::prelude::*;

/// Identifiers drawn to hit the separator and the escape often.
fn ident() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-Z0-9_|\\\\ é]{0,12}").expect("valid regex")
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        ident().prop_map(|quest_id| Action::AcceptQuest { quest_id }),
        (ident(), ident(), ident()).prop_map(|(quest_id, success_node, failure_node)| {
            Action::CheckQuest {
                quest_id,
                success_node,
                failure_node,
            }
        }),
        ident().prop_map(|quest_id| Action::CompleteQuest { quest_id }),
        (
            ident(),
            ident(),
            // Amounts start at 1: content refuses 0, and so does the payload.
            proptest::option::of((1u32..=u32::MAX, proptest::option::of(ident())))
        )
            .prop_map(
                |(quest_id, objective_id, amount)| Action::AdvanceObjective {
                    quest_id,
                    objective_id,
                    amount: amount.map(|(amount, island)| ObjectiveAmount { amount, island }),
                }
            ),
        ident().prop_map(|quest_id| Action::TrackQuest { quest_id }),
        ident().prop_map(|shop| Action::OpenShop { shop }),
        Just(Action::OpenSellMenu),
        (ident(), proptest::option::of(ident()))
            .prop_map(|(scene, quest_id)| Action::PlayCutscene { scene, quest_id }),
        ident().prop_map(|quest_id| Action::ChooseRideBoat { quest_id }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn parse_of_build_is_identity(action in action()) {
        let payload = ActionPayload::build(&action);
        prop_assert_eq!(ActionPayload::parse(action.action_type(), &payload), Ok(action));
    }

    #[test]
    fn identifiers_without_separators_are_the_articles_bytes(
        quest in "[A-Za-z0-9_]{1,10}", objective in "[A-Za-z0-9_]{1,10}", amount in 1u32..50,
    ) {
        let action = Action::AdvanceObjective {
            quest_id: quest.clone(),
            objective_id: objective.clone(),
            amount: Some(ObjectiveAmount { amount, island: None }),
        };
        prop_assert_eq!(ActionPayload::build(&action), format!("{quest}|{objective}|{amount}"));
    }

    /// Whatever a client sends, parsing never panics, and what parses is canonical.
    #[test]
    fn build_of_parse_is_identity(kind in 0usize..ActionType::ALL.len(), payload in "[a-z0-9|\\\\]{0,16}") {
        let kind = ActionType::ALL[kind];
        if let Ok(action) = ActionPayload::parse(kind, &payload) {
            prop_assert_eq!(ActionPayload::build(&action), payload);
        }
    }
}
