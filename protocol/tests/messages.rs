//! Wire messages: the JSON shapes docs/PROTOCOL.md promises, and strict decoding.

use banter_protocol::{
    ActionType, ClientMessage, DecidedBy, ErrorCode, InviteView, LeftReason, PartyView,
    QuestStatus, Roll, ServerMessage, SharedView, Vote,
};

#[test]
fn client_messages_decode_from_the_documented_json() {
    let m: ClientMessage =
        serde_json::from_str(r#"{"type":"action","id":7,"action":"CheckQuest","payload":"Q|A|B"}"#)
            .expect("decodes");
    assert_eq!(
        m,
        ClientMessage::Action {
            id: Some(7),
            action: ActionType::CheckQuest,
            payload: "Q|A|B".into()
        }
    );
    let m: ClientMessage = serde_json::from_str(
        r#"{"type":"talk","npc":"Dockmaster Reyes","instance":"reyes-north"}"#,
    )
    .expect("decodes");
    assert_eq!(m.kind(), "talk");
    assert_eq!(m.id(), None);
}

#[test]
fn unknown_types_fields_and_actions_are_refused() {
    for bad in [
        r#"{"type":"teleport","position":[0,0,0]}"#,
        r#"{"type":"advance","node":"A","extra":1}"#,
        r#"{"type":"action","action":"GiveMeGold","payload":""}"#,
        r#"{"type":"advance"}"#,
        r#"{"node":"A"}"#,
        r#"[1,2,3]"#,
    ] {
        assert!(serde_json::from_str::<ClientMessage>(bad).is_err(), "{bad}");
    }
}

#[test]
fn errors_carry_a_stable_snake_case_code() {
    let text = serde_json::to_string(&ServerMessage::Error {
        id: Some(3),
        code: ErrorCode::PayloadMismatch,
        message: "no".into(),
        retryable: ErrorCode::PayloadMismatch.retryable(),
    })
    .expect("encodes");
    assert_eq!(
        text,
        r#"{"type":"error","id":3,"code":"payload_mismatch","message":"no","retryable":false}"#
    );
}

#[test]
fn error_code_names_are_their_wire_form() {
    for code in ErrorCode::ALL {
        let wire = serde_json::to_string(&code).expect("encodes");
        assert_eq!(wire, format!("\"{}\"", code.name()));
    }
}

#[test]
fn quest_status_and_action_type_names_are_their_wire_form() {
    assert_eq!(QuestStatus::ALL.len(), 4);
    for status in QuestStatus::ALL {
        let wire = serde_json::to_string(&status).expect("encodes");
        assert_eq!(wire, format!("\"{}\"", status.name()));
    }
    assert_eq!(ActionType::ALL.len(), banter_protocol::ACTION_SPECS.len());
    for action in ActionType::ALL {
        let wire = serde_json::to_string(&action).expect("encodes");
        assert_eq!(wire, format!("\"{}\"", action.name()));
        assert_eq!(action.to_string(), action.name());
        assert_eq!(action.name().parse::<ActionType>(), Ok(action));
    }
    assert!("acceptQuest".parse::<ActionType>().is_err());
}

#[test]
fn every_message_kind_is_its_type_tag() {
    use banter_protocol::ClientMessageKind;
    use strum::VariantArray;
    let samples = [
        r#"{"type":"move","position":[0,0,0]}"#,
        r#"{"type":"talk","npc":"Pim"}"#,
        r#"{"type":"advance","node":"A"}"#,
        r#"{"type":"choose","response":"R"}"#,
        r#"{"type":"action","action":"AcceptQuest","payload":"Q"}"#,
        r#"{"type":"close"}"#,
        r#"{"type":"set_afk","afk":true}"#,
        r#"{"type":"set_locale","locale":"ja"}"#,
        r#"{"type":"fetch_conversation","conversation":"Pim"}"#,
        r#"{"type":"cutscene_done","scene":"S"}"#,
        r#"{"type":"abandon_quest","quest":"Q"}"#,
        r#"{"type":"resume","token":"t"}"#,
        r#"{"type":"party_form"}"#,
        r#"{"type":"party_invite","player":"p"}"#,
        r#"{"type":"party_accept","party":"pa"}"#,
        r#"{"type":"party_leave"}"#,
    ];
    assert_eq!(samples.len(), ClientMessageKind::VARIANTS.len());
    for (sample, kind) in samples.iter().zip(ClientMessageKind::VARIANTS) {
        let message: ClientMessage = serde_json::from_str(sample).expect(sample);
        assert_eq!(ClientMessageKind::from(&message), *kind);
        assert!(sample.starts_with(&format!(r#"{{"type":"{}""#, message.kind())));
        assert_eq!(message.kind().parse::<ClientMessageKind>(), Ok(*kind));
    }
}

#[test]
fn the_frame_decoder_keeps_the_id_of_a_frame_it_refuses() {
    let decoded =
        ClientMessage::decode(r#"{"type":"resume","id":4,"token":"t"}"#).expect("decodes");
    assert_eq!(
        decoded,
        ClientMessage::Resume {
            id: Some(4),
            token: "t".into()
        }
    );
    for (frame, id) in [
        (r#"{"type":"dance","id":7}"#, Some(7)),
        (r#"{"type":"close","id":3,"extra":1}"#, Some(3)),
        (r#"{"type":"close","id":"3"}"#, None),
        (r#"{"type":"move","position":[1e400,0,0]}"#, None),
        ("not json", None),
        ("", None),
    ] {
        let refused = ClientMessage::decode(frame).expect_err(frame);
        assert_eq!(refused.id, id, "{frame}");
        assert!(!refused.message.is_empty());
    }
}

/// `"id": null` is the same as no id, as for every optional field of a client message.
#[test]
fn a_null_id_is_no_id() {
    assert_eq!(
        ClientMessage::decode(r#"{"type":"close","id":null}"#),
        Ok(ClientMessage::Close { id: None })
    );
    let refused = ClientMessage::decode(r#"{"type":"dance","id":null}"#).expect_err("unknown type");
    assert_eq!(refused.id, None);
    assert!(refused.message.contains("dance"), "{}", refused.message);
}

/// An id that is not an unsigned 64-bit integer makes the frame malformed, and the refusal
/// carries no id: the decoder never makes one up, whatever else the frame holds.
#[test]
fn an_id_that_is_not_a_u64_is_malformed_and_answered_without_an_id() {
    for id in [
        "-1",
        "-0",
        "1.5",
        "1.0",
        "1e2",
        "18446744073709551616",
        "\"3\"",
        "true",
        "[3]",
        "{}",
    ] {
        for frame in [
            format!(r#"{{"type":"close","id":{id}}}"#),
            format!(r#"{{"type":"advance","id":{id},"node":"A"}}"#),
            format!(r#"{{"type":"dance","id":{id}}}"#),
            format!(r#"{{"type":"advance","id":{id}}}"#),
        ] {
            let refused = ClientMessage::decode(&frame).expect_err(&frame);
            assert_eq!(refused.id, None, "{frame}");
            assert!(
                refused
                    .message
                    .starts_with("`id` must be an unsigned 64-bit integer"),
                "{frame}: {}",
                refused.message
            );
        }
    }
}

/// A number JSON cannot hold (`1e400`) makes the frame unreadable JSON: malformed, no id.
#[test]
fn an_id_out_of_json_range_is_malformed_without_an_id() {
    let refused = ClientMessage::decode(r#"{"type":"close","id":1e400}"#).expect_err("range");
    assert_eq!(refused.id, None);
}

/// The whole u64 range is a valid id, 0 and 2^64-1 included.
#[test]
fn every_u64_is_a_valid_id() {
    for id in [0, 1, u64::MAX] {
        assert_eq!(
            ClientMessage::decode(&format!(r#"{{"type":"close","id":{id}}}"#)),
            Ok(ClientMessage::Close { id: Some(id) })
        );
        let refused = ClientMessage::decode(&format!(r#"{{"type":"close","id":{id},"x":1}}"#))
            .expect_err("unknown field");
        assert_eq!(refused.id, Some(id));
    }
}

/// A frame with two ids has no single one to answer under: malformed, without an id.
#[test]
fn a_frame_with_two_ids_is_answered_without_an_id() {
    let refused =
        ClientMessage::decode(r#"{"type":"close","id":1,"id":2}"#).expect_err("duplicate");
    assert_eq!(refused.id, None);
}

fn every_server_message() -> Vec<ServerMessage> {
    use banter_protocol::{
        ByeReason, CloseReason, Effect, FactSheet, NpcRef, Profile, QuestStatus,
    };
    let profile = Profile {
        coins: 30,
        experience: 20,
        tutorial_stage: 1,
        tracked_quest: Some("CopperSnappers".into()),
    };
    let effects = vec![
        Effect::QuestAccepted {
            quest: "Q".into(),
            objectives: vec!["A".into(), "B".into()],
        },
        Effect::QuestChecked {
            quest: "Q".into(),
            done: true,
        },
        Effect::QuestCompleted {
            quest: "Q".into(),
            coins: 1,
            experience: 2,
        },
        Effect::ObjectiveAdvanced {
            quest: "Q".into(),
            objective: "A".into(),
            progress: 1,
            target: 3,
        },
        Effect::QuestTracked { quest: "Q".into() },
        Effect::OpenShop { shop: "S".into() },
        Effect::OpenSellMenu {},
        Effect::PlayCutscene { scene: "C".into() },
        Effect::ChooseRideBoat { quest: "Q".into() },
    ];
    let mut messages = vec![
        ServerMessage::Welcome {
            protocol: 1,
            player: "p".into(),
            session: 1,
            profile: profile.clone(),
            resume_token: "t".into(),
            position: Some([1.0, 2.0, 3.0]),
            cutscene: Some("LanternLighting".into()),
            locale: "ja".into(),
            locales: vec!["en".into(), "ja".into(), "en-XA".into()],
            party: Some(PartyView {
                id: "pa".into(),
                leader: "p".into(),
                members: vec!["p".into(), "q".into()],
            }),
            invites: vec![InviteView {
                party: "pb".into(),
                from: "r".into(),
            }],
        },
        ServerMessage::Resumed {
            conversation: "Pim".into(),
            hash: "h".into(),
        },
        ServerMessage::Ack { id: u64::MAX },
        ServerMessage::Opened {
            conversation: "Pim".into(),
            npc: NpcRef {
                id: "pim".into(),
                name: "Pim".into(),
                island: "mistral_cay".into(),
            },
            speaker: Some("Pim".into()),
            entry: "E".into(),
            hash: "h".into(),
            content: Some("{}".into()),
            facts: FactSheet {
                quests: [("Q".to_owned(), QuestStatus::Active)].into(),
                progress: [("Q/A".to_owned(), 1)].into(),
                coins: 1,
                experience: 2,
                tutorial_stage: 0,
                has: vec!["Dialogue.Talking".into()],
                vars: [
                    ("Met".to_owned(), banter_protocol::VarValue::Bool(true)),
                    ("Nets".to_owned(), banter_protocol::VarValue::Int(-3)),
                    (
                        "Mood".to_owned(),
                        banter_protocol::VarValue::Text("calm".into()),
                    ),
                ]
                .into(),
                visits: [("Greet".to_owned(), 2)].into(),
                last_seen: [("Greet".to_owned(), 7)].into(),
                opens: 3,
                seed: Some(u64::MAX),
            },
            shared: Some(SharedView {
                party: "pa".into(),
                leader: "p".into(),
                participants: vec!["p".into(), "q".into()],
                votes: vec![Vote {
                    player: "q".into(),
                    response: "R".into(),
                }],
            }),
        },
        ServerMessage::Jump { node: "N".into() },
        ServerMessage::Closed {
            reason: CloseReason::WalkedAway,
        },
        ServerMessage::Conversation {
            conversation: "Pim".into(),
            hash: "h".into(),
            content: "{}".into(),
        },
        ServerMessage::Error {
            id: Some(3),
            code: ErrorCode::TooFar,
            message: "m".into(),
            retryable: false,
        },
        ServerMessage::Bye {
            reason: ByeReason::Replaced,
            message: "m".into(),
        },
        ServerMessage::LocaleSet {
            locale: "ja".into(),
        },
        ServerMessage::QuestAbandoned {
            quest: "Q".into(),
            profile: profile.clone(),
        },
        ServerMessage::Party { party: None },
        ServerMessage::PartyInvited {
            party: "pa".into(),
            from: "p".into(),
        },
        ServerMessage::Participants {
            leader: "p".into(),
            participants: vec!["p".into()],
            joined: None,
            left: Some("q".into()),
            reason: Some(LeftReason::WalkedAway),
        },
        ServerMessage::Voted {
            player: "q".into(),
            response: "R".into(),
        },
        ServerMessage::Chosen {
            line: "L".into(),
            response: "R".into(),
            node: Some("N".into()),
            by: DecidedBy::TieRoll,
            votes: vec![],
            seed: Some(u64::MAX.to_string()),
            rolls: vec![Roll {
                player: "p".into(),
                roll: 20,
            }],
        },
        ServerMessage::Advanced {
            line: "L".into(),
            node: None,
        },
    ];
    messages.extend(effects.into_iter().map(|effect| ServerMessage::Effect {
        action: ActionType::AcceptQuest,
        effect,
        profile: profile.clone(),
    }));
    messages
}

/// Every server message survives a round trip through its JSON (the types refuse unknown
/// fields, as the schema says, and that must not get in the way of their own output).
#[test]
fn server_messages_round_trip_through_json() {
    for message in every_server_message() {
        let text = serde_json::to_string(&message).expect("encodes");
        let back: ServerMessage = serde_json::from_str(&text).expect(&text);
        assert_eq!(back, message, "{text}");
    }
}

/// A field the schema does not name is refused at every level: message, effect, profile. (One
/// exception on the Rust side only: serde does not refuse extra fields beside the tag of a unit
/// variant, `open_sell_menu`; the schema does.)
#[test]
fn server_messages_refuse_unknown_fields() {
    for bad in [
        r#"{"type":"ack","id":1,"extra":1}"#,
        r#"{"type":"effect","action":"OpenShop","effect":{"kind":"open_shop","shop":"S","x":1},"profile":{"coins":0,"experience":0,"tutorial_stage":0}}"#,
        r#"{"type":"opened","conversation":"Pim","npc":{"id":"pim","name":"Pim","island":"i","x":1},"entry":"E","hash":"h","facts":{"coins":0,"experience":0,"tutorial_stage":0}}"#,
        r#"{"type":"opened","conversation":"Pim","npc":{"id":"pim","name":"Pim","island":"i"},"entry":"E","hash":"h","facts":{"coins":0,"experience":0,"tutorial_stage":0,"x":1}}"#,
        r#"{"type":"effect","action":"OpenSellMenu","effect":{"kind":"open_sell_menu"},"profile":{"coins":0,"experience":0,"tutorial_stage":0,"x":1}}"#,
        r#"{"type":"closed","reason":"client","id":1}"#,
    ] {
        assert!(serde_json::from_str::<ServerMessage>(bad).is_err(), "{bad}");
    }
    let good = r#"{"type":"effect","action":"OpenSellMenu","effect":{"kind":"open_sell_menu"},"profile":{"coins":0,"experience":0,"tutorial_stage":0}}"#;
    assert!(serde_json::from_str::<ServerMessage>(good).is_ok());
}

#[test]
fn an_effect_without_fields_still_refuses_unknown_fields() {
    let extra = r#"{"type":"effect","action":"OpenSellMenu","effect":{"kind":"open_sell_menu","x":1},"profile":{"coins":0,"experience":0,"tutorial_stage":0}}"#;
    assert!(serde_json::from_str::<ServerMessage>(extra).is_err());
    let plain = r#"{"type":"effect","action":"OpenSellMenu","effect":{"kind":"open_sell_menu"},"profile":{"coins":0,"experience":0,"tutorial_stage":0}}"#;
    let decoded: ServerMessage = serde_json::from_str(plain).expect("decodes");
    assert_eq!(serde_json::to_string(&decoded).expect("encodes"), plain);
}
