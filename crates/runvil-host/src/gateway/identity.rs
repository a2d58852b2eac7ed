//! Who made a request, as the gatekeeper found it: nobody in particular (a loopback gateway
//! without authentication), the subject of a verified access token, or an API key by its name.
//! The policy matches on it and the audit trail names it by its label.

use std::fmt;

use serde_json::{Map, Value};

/// Who made a request. `Debug` is written by hand: the label only, never a claim's value
/// beyond it.
#[derive(Clone)]
pub(crate) enum Identity {
    /// No authentication: only ever on a loopback address.
    Anonymous,
    /// A verified access token of the team's issuer: its `sub` and its claims.
    Subject {
        sub: String,
        claims: Map<String, Value>,
    },
    /// An API key of `--api-keys`, by its NAME.
    Key { name: String },
}

/// The label of [`Identity::Anonymous`].
pub(crate) const ANONYMOUS: &str = "anonymous";

/// What starts the label of an [`Identity::Key`]: `key:ci`.
pub(crate) const KEY_PREFIX: &str = "key:";

impl Identity {
    /// As the audit trail and the policy name it: `anonymous`, the `sub`, or `key:NAME`. The
    /// gatekeeper refuses a token whose `sub` reads as one of the other two, so a label names
    /// one identity only.
    pub(crate) fn label(&self) -> String {
        match self {
            Self::Anonymous => ANONYMOUS.to_owned(),
            Self::Subject { sub, .. } => sub.clone(),
            Self::Key { name } => format!("{KEY_PREFIX}{name}"),
        }
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Identity({})", self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_names_the_identity_and_debug_shows_nothing_more() {
        let claims = serde_json::json!({"sub": "alice", "groups": ["eng"], "email": "a@x.example"});
        let subject = Identity::Subject {
            sub: "alice".into(),
            claims: claims.as_object().expect("an object").clone(),
        };
        assert_eq!(subject.label(), "alice");
        assert_eq!(format!("{subject:?}"), "Identity(alice)");
        let key = Identity::Key { name: "ci".into() };
        assert_eq!(key.label(), "key:ci");
        assert_eq!(format!("{key:?}"), "Identity(key:ci)");
        assert_eq!(Identity::Anonymous.label(), "anonymous");
        assert_eq!(format!("{:?}", Identity::Anonymous), "Identity(anonymous)");
    }
}
