//! Typed values a Host lends to the Packs it builds.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

/// A key for one kind of service: a name and the type of the value stored under it.
pub struct Service<T> {
    name: &'static str,
    // `fn() -> T` keeps the key `Send + Sync + Copy` whatever `T` is.
    _value: PhantomData<fn() -> T>,
}

impl<T> Service<T> {
    /// A key with this name. Two keys with one name must have one type.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            _value: PhantomData,
        }
    }

    /// The key's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T> Clone for Service<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Service<T> {}

impl<T> fmt::Debug for Service<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Service({})", self.name)
    }
}

/// The Host's tokio runtime. A Pack runs its background work here, never on a runtime of its
/// own, so the Host decides threads and shutdown.
pub const TOKIO_RUNTIME: Service<tokio::runtime::Handle> = Service::new("tokio-runtime");

/// A typed map of services.
#[derive(Default)]
pub struct Services {
    values: HashMap<&'static str, Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.values.keys()).finish()
    }
}

impl Services {
    /// No services.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value` under `key`, replacing any earlier one.
    pub fn insert<T: Send + Sync + 'static>(&mut self, key: Service<T>, value: T) {
        self.values.insert(key.name, Box::new(value));
    }

    /// The value stored under `key`, if there is one of its type.
    pub fn get<T: Send + Sync + 'static>(&self, key: Service<T>) -> Option<&T> {
        self.values.get(key.name)?.downcast_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_finds_by_key() {
        const ANSWER: Service<u32> = Service::new("answer");
        let mut services = Services::new();
        assert!(services.get(ANSWER).is_none());
        services.insert(ANSWER, 42);
        assert_eq!(services.get(ANSWER), Some(&42));
        assert_eq!(format!("{services:?}"), "{\"answer\"}");
    }

    #[test]
    fn a_key_of_another_type_finds_nothing() {
        let mut services = Services::new();
        services.insert(Service::<u32>::new("x"), 1);
        assert!(services.get(Service::<String>::new("x")).is_none());
    }

    #[test]
    fn lends_the_tokio_runtime() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let mut services = Services::new();
        services.insert(TOKIO_RUNTIME, runtime.handle().clone());
        let handle = services.get(TOKIO_RUNTIME).expect("handle");
        assert_eq!(handle.block_on(async { 2 + 2 }), 4);
        assert_eq!(TOKIO_RUNTIME.name(), "tokio-runtime");
    }
}
