//! The registry of Packs and how one is built.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::{Pack, Services, Unavailable};

/// Builds a Pack when a run asks for it.
pub trait PackFactory: Send + Sync {
    /// Builds the Pack. Must do no I/O (no socket, DNS, file or process): a Pack that needs
    /// the network starts that work on a runtime from [`Services`] and reports it later.
    fn construct(&self, cx: Construct<'_>) -> Result<Arc<dyn Pack>, Unavailable>;
}

/// What a factory is given to build its Pack.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Construct<'a> {
    /// The id the Pack's tools are qualified with.
    pub id: &'a str,
    /// The Pack's part of the Host's configuration.
    pub config: &'a Value,
    /// What the Host lends its Packs.
    pub services: &'a Services,
}

struct Entry {
    name: String,
    config: Value,
    factory: Box<dyn PackFactory>,
}

/// The Host's registry of Packs, keyed by id.
#[derive(Default)]
pub struct Packs {
    entries: BTreeMap<String, Entry>,
}

impl fmt::Debug for Packs {
    // Configurations may hold secrets, so only names and ids are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(id, e)| (id, &e.name)))
            .finish()
    }
}

impl Packs {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a Pack under its name (such as `runvil/mcp`) and id (such as `mcp`), with
    /// its configuration. A second insert with the same id replaces the first.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        id: impl Into<String>,
        config: Value,
        factory: impl PackFactory + 'static,
    ) {
        let entry = Entry {
            name: name.into(),
            config,
            factory: Box::new(factory),
        };
        self.entries.insert(id.into(), entry);
    }

    /// The ids of every registered Pack, in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The name a Pack was registered under.
    pub fn name(&self, id: &str) -> Option<&str> {
        self.entries.get(id).map(|e| e.name.as_str())
    }

    /// The configuration a Pack was registered with.
    pub fn config(&self, id: &str) -> Option<&Value> {
        self.entries.get(id).map(|e| &e.config)
    }

    /// Builds the Pack registered under `id` with the Host's services.
    pub fn construct(&self, id: &str, services: &Services) -> Result<Arc<dyn Pack>, Unavailable> {
        let entry = self
            .entries
            .get(id)
            .ok_or_else(|| Unavailable::new(format!("no pack has the id {id:?}")))?;
        entry.factory.construct(Construct {
            id,
            config: &entry.config,
            services,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BoxFuture, CallOptions, ToolError, ToolSpec};

    struct Echo(String);

    impl Pack for Echo {
        fn prelude(&self) -> Option<&str> {
            None
        }
        fn tools(&self) -> Vec<ToolSpec> {
            Vec::new()
        }
        fn ready(&self) -> BoxFuture<'_, Result<(), Unavailable>> {
            Box::pin(async { Ok(()) })
        }
        fn call_with(
            &self,
            _: &str,
            _: Value,
            _: CallOptions,
        ) -> BoxFuture<'_, Result<String, ToolError>> {
            let text = self.0.clone();
            Box::pin(async move { Ok(text) })
        }
    }

    struct EchoFactory;

    impl PackFactory for EchoFactory {
        fn construct(&self, cx: Construct<'_>) -> Result<Arc<dyn Pack>, Unavailable> {
            Ok(Arc::new(Echo(format!("{}:{}", cx.id, cx.config))))
        }
    }

    #[tokio::test]
    async fn construct_passes_id_and_config() {
        let mut packs = Packs::new();
        packs.insert("test/echo", "echo", serde_json::json!(7), EchoFactory);
        assert_eq!(packs.ids().collect::<Vec<_>>(), ["echo"]);
        assert_eq!(packs.name("echo"), Some("test/echo"));
        assert_eq!(packs.config("echo"), Some(&serde_json::json!(7)));
        let pack = packs.construct("echo", &Services::new()).expect("built");
        let out = pack.call("echo/x", Value::Null).await;
        assert_eq!(out, Ok("echo:7".to_owned()));
    }

    #[test]
    fn unknown_id_is_unavailable() {
        let packs = Packs::new();
        let error = packs.construct("nope", &Services::new()).err();
        assert_eq!(error, Some(Unavailable::new("no pack has the id \"nope\"")));
    }

    #[test]
    fn debug_shows_no_configuration() {
        let mut packs = Packs::new();
        packs.insert(
            "test/echo",
            "echo",
            serde_json::json!("hunter2"),
            EchoFactory,
        );
        let shown = format!("{packs:?}");
        assert!(shown.contains("test/echo"));
        assert!(!shown.contains("hunter2"));
    }
}
