//! The registry of Packs and how one is built.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::{Config, Pack, Services, Unavailable};

/// Builds a Pack when a run asks for it.
pub trait PackFactory: Send + Sync {
    /// Builds the Pack. Must do no I/O (no socket, DNS, file or process): a Pack that needs
    /// the network starts that work on a runtime from [`Services`] and reports it later.
    fn construct(&self, cx: Construct<'_>) -> Result<Arc<dyn Pack>, Unavailable>;
}

/// What a factory is given to build its Pack.
#[non_exhaustive]
pub struct Construct<'a> {
    /// The id the Pack's tools are qualified with.
    pub id: &'a str,
    /// The Pack's part of the Host's configuration, handed over: the registry keeps no copy.
    /// It may hold secrets; the factory reads what it needs, and the rest is wiped when it is
    /// dropped.
    pub config: Config,
    /// What the Host lends its Packs.
    pub services: &'a Services,
}

impl fmt::Debug for Construct<'_> {
    // The configuration shows only its keys, as its own `Debug` does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Construct")
            .field("id", &self.id)
            .field("config", &self.config)
            .field("services", self.services)
            .finish()
    }
}

struct Entry {
    name: String,
    /// Its configuration until the Pack is built; `None` after.
    config: Option<Config>,
    factory: Box<dyn PackFactory>,
}

/// The Host's registry of Packs, keyed by id.
///
/// It keeps each Pack's configuration only until the Pack is built: [`Packs::construct`] hands
/// it to the factory, so nothing the configuration holds (a token written into it) stays in
/// the registry, and each Pack is built once.
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
            config: Some(Config::new(config)),
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

    /// Builds the Pack registered under `id` with the Host's services, handing its factory the
    /// configuration. A Pack is built once: a second construct is unavailable (insert it again
    /// to build another).
    pub fn construct(
        &mut self,
        id: &str,
        services: &Services,
    ) -> Result<Arc<dyn Pack>, Unavailable> {
        let entry = self
            .entries
            .get_mut(id)
            .ok_or_else(|| Unavailable::new(format!("no pack has the id {id:?}")))?;
        let config = entry.config.take().ok_or_else(|| {
            Unavailable::new(format!(
                "the pack {id:?} was built already; a registry builds each pack once"
            ))
        })?;
        entry.factory.construct(Construct {
            id,
            config,
            services,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BoxFuture, ToolError, ToolSpec};

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
        fn call(&self, _: &str, _: Value) -> BoxFuture<'_, Result<String, ToolError>> {
            let text = self.0.clone();
            Box::pin(async move { Ok(text) })
        }
    }

    /// Builds an [`Echo`] of what it was given, as `Debug` shows it, and of the configuration.
    struct EchoFactory;

    impl PackFactory for EchoFactory {
        fn construct(&self, cx: Construct<'_>) -> Result<Arc<dyn Pack>, Unavailable> {
            Ok(Arc::new(Echo(format!("{cx:?} {}", cx.config.value()))))
        }
    }

    #[tokio::test]
    async fn construct_hands_the_config_over_once() {
        let mut packs = Packs::new();
        packs.insert(
            "test/echo",
            "echo",
            serde_json::json!({"k": 7}),
            EchoFactory,
        );
        assert_eq!(packs.ids().collect::<Vec<_>>(), ["echo"]);
        assert_eq!(packs.name("echo"), Some("test/echo"));
        let pack = packs.construct("echo", &Services::new()).expect("built");
        let out = pack.call("echo/x", Value::Null).await;
        let given = r#"Construct { id: "echo", config: Config(["k"]), services: {} } {"k":7}"#;
        assert_eq!(out, Ok(given.to_owned()));
        // The registry kept nothing to build another from.
        let again = packs.construct("echo", &Services::new()).err();
        let built = "the pack \"echo\" was built already; a registry builds each pack once";
        assert_eq!(again, Some(Unavailable::new(built)));
        assert_eq!(packs.name("echo"), Some("test/echo"));
    }

    #[test]
    fn unknown_id_is_unavailable() {
        let mut packs = Packs::new();
        let error = packs.construct("nope", &Services::new()).err();
        assert_eq!(error, Some(Unavailable::new("no pack has the id \"nope\"")));
    }

    #[test]
    fn debug_shows_no_configuration() {
        let mut packs = Packs::new();
        let config = serde_json::json!({"hunter2-key": "hunter2"});
        packs.insert("test/echo", "echo", config, EchoFactory);
        let shown = format!("{packs:?}");
        assert_eq!(shown, r#"{"echo": "test/echo"}"#);
    }
}
