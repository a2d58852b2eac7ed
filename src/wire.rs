//! The lenient shapes every message of a server is read into: a field kept only when it has
//! the type the Pack expects ([`Loose`]), and a struct read only from a JSON object
//! ([`Object`]). They sit under the messages (`jsonrpc`), the sessions and the envelope alike,
//! and know nothing of MCP.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// A field read only when it has the type the Pack expects; any other JSON there counts as
/// absent, since one odd field of a server must not cost it the whole page.
#[derive(Debug)]
pub(crate) struct Loose<T>(pub(crate) Option<T>);

impl<T> Default for Loose<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Borrowed, so the field's text is not copied before it is read as `T`.
        let raw = <&'de RawValue>::deserialize(deserializer)?;
        Ok(Self(serde_json::from_str(raw.get()).ok()))
    }
}

/// A struct read only from a JSON object: serde reads a struct from an array too, field by
/// position, which no server means.
#[derive(Debug)]
pub(crate) struct Object<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Fields(PhantomData)).map(Self)
    }
}

struct Fields<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, fields: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(fields))
    }
}
