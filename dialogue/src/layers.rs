//! Layers: a right-biased union of node maps (article section 4), with per-field patches.
//!
//! `D = B ⊕ S ⊕ H ⊕ L`: base, then side quests, then story, then the tutorial's lockout nodes.
//! The union is associative but not commutative, so [`Layer`] fixes the order. The base is only
//! borrowed: it is shared by every NPC that uses it, so the union builds a new map and never
//! writes into what it was given.

use std::collections::BTreeMap;
use std::fmt;

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Conversation, ConversationFile, NodeEntry};

/// The layers in the order they are applied; a later layer wins a name collision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Base,
    Side,
    Story,
    Lockout,
}

impl Layer {
    pub const ALL: [Layer; 4] = [Layer::Base, Layer::Side, Layer::Story, Layer::Lockout];

    /// The content folder of this layer.
    pub fn folder(self) -> &'static str {
        match self {
            Layer::Base => "base",
            Layer::Side => "side",
            Layer::Story => "story",
            Layer::Lockout => "lockout",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.folder())
    }
}

/// Merges a base conversation with its layers. `layers` must be in [`Layer`] order; each
/// override of a lower node is reported as a warning naming the layer it replaced.
pub fn merge(
    name: &str,
    base: &ConversationFile,
    layers: &[(Layer, &ConversationFile)],
    diagnostics: &mut Vec<Diagnostic>,
) -> Conversation {
    let mut out = Conversation {
        name: name.to_owned(),
        first_node: base.first_node.clone(),
        speaker: base.speaker.clone(),
        shared: base.shared,
        nodes: BTreeMap::new(),
        origin: BTreeMap::new(),
        base_file: base.file.clone(),
    };
    // Which layer each node currently comes from, for the override warning.
    let mut from_layer: BTreeMap<&str, Layer> = BTreeMap::new();
    let all = std::iter::once((Layer::Base, base)).chain(layers.iter().copied());
    for (layer, file) in all {
        if layer != Layer::Base {
            if file.first_node.is_some() {
                out.first_node.clone_from(&file.first_node);
            }
            if file.speaker.is_some() {
                out.speaker.clone_from(&file.speaker);
            }
            // Whether a party walks the conversation together is the base file's to say: a
            // layer (a lockout layer is added to every conversation) cannot make one shared.
            if file.shared.is_some() {
                diagnostics.push(
                    Diagnostic::error(&file.file, Problem::SharedInLayer(layer.to_string()))
                        .field(crate::canonical::SHARED),
                );
            }
        }
        for (node_name, entry) in &file.nodes {
            let merged = match entry {
                NodeEntry::Whole(node) => {
                    if let Some(lower) = from_layer.get(node_name.as_str()) {
                        diagnostics.push(
                            Diagnostic::warning(&file.file, Problem::Overrides(lower.to_string()))
                                .node(node_name),
                        );
                    }
                    node.clone()
                }
                NodeEntry::Patch(patch) => match out.nodes.get(node_name) {
                    Some(lower) => patch.apply(lower),
                    None => {
                        diagnostics.push(
                            Diagnostic::error(&file.file, Problem::PatchOfNothing).node(node_name),
                        );
                        continue;
                    }
                },
            };
            from_layer.insert(node_name, layer);
            out.nodes.insert(node_name.clone(), merged);
            out.origin.insert(node_name.clone(), file.file.clone());
        }
    }
    out
}
