//! The Pack's edge, where what the layers below hand up typed becomes text: a transport's or
//! a session's error, a session's troubles (logged), a call's progress (handed to the Host), a
//! header declaration or argument refused (whose words `param_headers::render` keeps). Each is
//! shown here, once, by [`Render`] with the Pack's scrubber, which knows every server's
//! secrets: the session and the transport hold none, and what a server said stays `Untrusted`
//! until it arrives here. (The authorization, which learns secrets as it runs, and the
//! envelope's checks hold a scrubber of their own and show what they refuse themselves.)

use reqwest::StatusCode;
use runvil_plugin::Progress;

use crate::envelope;
use crate::policy::{
    ACCEPTED_PROTOCOL_VERSIONS, MAX_ERROR_CHARS, MAX_IDLE_RESUMPTIONS, MAX_PROGRESS_MESSAGE_CHARS,
    MAX_STATUS_MESSAGE_CHARS, MAX_TOOL_PAGES, MODERN_PROTOCOL_VERSIONS,
};
use crate::session::{Broke, Broken, Declined, End, Noticed, SessionError, Trouble};
use crate::text::{Piece, Render, Scrubber, Shown, show, show_escaped};
use crate::transport::TransportError;

impl Render for TransportError {
    fn render(&self, scrubber: &Scrubber) -> Shown {
        let composed =
            |pieces: &[Piece<'_>]| Shown::concat(pieces.iter().copied(), MAX_ERROR_CHARS);
        match self {
            Self::Send(e) => composed(&[
                "could not reach the server: ".into(),
                (&e.render(scrubber)).into(),
            ]),
            Self::Body(e) => composed(&[
                "the answer broke off: ".into(),
                (&e.render(scrubber)).into(),
            ]),
            Self::Redirect(status) => composed(&[
                "the server answered HTTP ".into(),
                u64::from(*status).into(),
                " (a redirect); redirects are refused so configured headers reach only the \
                 configured server: configure the final URL"
                    .into(),
            ]),
            Self::Status { status, said } => {
                let said = said
                    .as_ref()
                    .map(|s| s.show(scrubber, MAX_STATUS_MESSAGE_CHARS));
                let mut pieces = vec![
                    "the server answered HTTP ".into(),
                    u64::from(*status).into(),
                    " ".into(),
                    canonical_reason(*status).into(),
                ];
                if let Some(said) = &said {
                    pieces.extend([Piece::Ours(": "), Piece::Shown(said)]);
                }
                composed(&pieces)
            }
            Self::TooLarge { limit } => composed(&[
                "the answer is larger than ".into(),
                (*limit).into(),
                " bytes".into(),
            ]),
            Self::ContentType(kind) => composed(&[
                "the answer's content type is ".into(),
                (&show_escaped(scrubber, kind.peek(), MAX_ERROR_CHARS)).into(),
                ", not application/json or text/event-stream".into(),
            ]),
            Self::Sse(e) => show(scrubber, &e.to_string(), MAX_ERROR_CHARS),
            Self::Protocol(e) => Shown::ours(e),
            Self::Auth(e) => e.render(scrubber),
        }
    }
}

/// HTTP's name for `status`, or nothing for a code it does not name.
fn canonical_reason(status: u16) -> &'static str {
    StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

impl Render for SessionError {
    fn render(&self, scrubber: &Scrubber) -> Shown {
        let text = match self {
            Self::Transport(e) => return e.render(scrubber),
            Self::Rpc { code, message, .. } => {
                return envelope::rpc_error_text(*code, message, scrubber);
            }
            Self::InputRequired(kinds) => {
                let mut text = "the tool needs input this client cannot give: the server \
                                answered input_required"
                    .to_owned();
                if !kinds.is_empty() {
                    text.push_str(&format!(", asking for {}", kinds.join(" and ")));
                }
                text.push_str(
                    "; this Pack declares no client capabilities, so it cannot answer a form, \
                     a sampling request or any other question from a server",
                );
                text
            }
            Self::Version => format!(
                "the server speaks none of the protocol versions {}, {}",
                MODERN_PROTOCOL_VERSIONS.join(", "),
                ACCEPTED_PROTOCOL_VERSIONS.join(", ")
            ),
            Self::Protocol(broken) => return broken.render(scrubber),
        };
        show(scrubber, &text, MAX_ERROR_CHARS)
    }
}

impl Render for Broken {
    fn render(&self, scrubber: &Scrubber) -> Shown {
        let text = match self {
            Self::NoBody => "the server answered a request with no body".to_owned(),
            Self::NotJson => "the answer is not JSON".to_owned(),
            Self::NotTheAnswer => "the answer does not respond to the request".to_owned(),
            Self::NeitherResultNorError => "the response has neither result nor error".to_owned(),
            Self::StreamEnded => {
                "the stream ended before the answer (a 2026-07-28 stream cannot be resumed)"
                    .to_owned()
            }
            Self::NoEventId => {
                "the stream ended before the answer, with no event id to resume from".to_owned()
            }
            Self::IdleResumptions => {
                format!("the stream was resumed {MAX_IDLE_RESUMPTIONS} times without a new event")
            }
            Self::ResultType => {
                "the result's resultType is neither complete nor input_required".to_owned()
            }
            Self::Listing(too_many) => too_many.to_string(),
            Self::RepeatedCursor => {
                "tools/list repeated a cursor, which would never end".to_owned()
            }
            Self::TooManyPages => format!("tools/list sent more than {MAX_TOOL_PAGES} pages"),
            Self::Name(e) => return e.render(scrubber),
        };
        show(scrubber, &text, MAX_ERROR_CHARS)
    }
}

impl Render for Declined {
    fn render(&self, scrubber: &Scrubber) -> Shown {
        let text = match self {
            Self::Status(status) => format!("the server refused it (HTTP {status})"),
            Self::Error(code) => format!("the server refused it with error {code}"),
            Self::NoStream => "the server answered it without a stream".to_owned(),
            Self::NoBody => "the server answered it with no body".to_owned(),
            Self::EndedWith(code) => format!("the server ended it with error {code}"),
            Self::NeitherResultNorError => {
                "the server answered it with neither result nor error".to_owned()
            }
            Self::Acknowledgement(why) => (*why).to_owned(),
        };
        show(scrubber, &text, MAX_ERROR_CHARS)
    }
}

impl Render for Broke {
    fn render(&self, scrubber: &Scrubber) -> Shown {
        match self {
            Self::Transport(e) => e.render(scrubber),
            Self::Ended => show(
                scrubber,
                "the stream ended without an answer",
                MAX_ERROR_CHARS,
            ),
        }
    }
}

/// Logs what a session met that no caller waits for, in the span it met it in.
pub(crate) fn log(trouble: &Trouble, scrubber: &Scrubber) {
    match trouble {
        Trouble::Unanswered(e) => {
            let error = e.render(scrubber);
            tracing::debug!(error = %error.line(), "could not answer a server request");
        }
        Trouble::Unheard(e) => {
            let reason = e.render(scrubber);
            tracing::debug!(reason = %reason.line(), "the stream for notices could not be opened");
        }
        Trouble::Subscription(End::Graceful) => {
            tracing::debug!("the server ended the subscription to its notices");
        }
        Trouble::Subscription(End::Refused(refusal)) => {
            let reason = refusal.render(scrubber);
            tracing::warn!(reason = %reason.line(), "the subscription to the server's notices ended");
        }
        Trouble::Subscription(End::Abrupt(broke)) => {
            let reason = broke.render(scrubber);
            tracing::debug!(reason = %reason.line(), "the subscription to the server's notices broke off");
        }
    }
}

/// A progress notice as the Host is shown it: its message scrubbed, cleaned and capped.
pub(crate) fn progress(noticed: Noticed, scrubber: &Scrubber) -> Progress {
    let message = noticed.message.map(|m| {
        m.show(scrubber, MAX_PROGRESS_MESSAGE_CHARS)
            .leave(String::from)
    });
    Progress {
        progress: noticed.progress,
        total: noticed.total,
        message,
    }
}
