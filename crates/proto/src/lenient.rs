//! The lenient field types every reader here is built of: a field of the wrong type reads as
//! absent (and says so where a server must refuse it), never as a broken answer, since real
//! servers and clients are sloppy. Each deserializes any JSON value without failing, so a shape
//! made of them reads whatever object it is given.

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::marker::PhantomData;

/// What one JSON value is, as the scalar fields below need it (a container is skipped unread).
enum Scalar<'a> {
    Null,
    Text(Cow<'a, str>),
    /// A number, as JSON writes it.
    Number(String),
    Bool(bool),
    /// An object or an array.
    Container,
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar<'a>, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Scalar::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Scalar::Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Scalar::Text(Cow::Owned(s)))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
                Ok(Scalar::Bool(b))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Ok(Scalar::Number(n.to_string()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Ok(Scalar::Number(n.to_string()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
                Ok(Scalar::Number(
                    serde_json::Number::from_f64(n)
                        .map_or_else(|| n.to_string(), |n| n.to_string()),
                ))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Scalar::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(Any)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Container)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Container)
            }
        }
        d.deserialize_any(Any)
    }
}

/// A string field: its text, or nothing when the field holds anything else (and whether it
/// held something else, for a server that must refuse that).
#[derive(Debug, Default)]
pub(crate) struct Str<'a> {
    text: Option<Cow<'a, str>>,
    pub other: bool,
}

impl Str<'_> {
    pub fn get(&self) -> Option<&str> {
        self.text.as_deref()
    }

    pub fn owned(&self) -> Option<String> {
        self.text.as_deref().map(str::to_string)
    }

    /// The text, moved out.
    pub fn take(self) -> Option<String> {
        self.text.map(Cow::into_owned)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str<'a>, D::Error> {
        Ok(match Scalar::deserialize(d)? {
            Scalar::Null => Str::default(),
            Scalar::Text(t) => Str {
                text: Some(t),
                other: false,
            },
            _ => Str {
                text: None,
                other: true,
            },
        })
    }
}

/// An id a peer wrote: a non-empty string, or a number (some servers number their tasks),
/// read as its text; anything else is no id.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Id(pub Option<String>);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        Ok(Id(match Scalar::deserialize(d)? {
            Scalar::Text(t) if !t.is_empty() => Some(t.into_owned()),
            Scalar::Number(n) => Some(n),
            _ => None,
        }))
    }
}

/// A flag: `true` only when the field is JSON `true`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Flag, D::Error> {
        Ok(Flag(matches!(Scalar::deserialize(d)?, Scalar::Bool(true))))
    }
}

/// Whether a field is there at all, whatever it holds (null too).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Present(pub bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Present, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

/// An object field read as `T`; `None` when it is absent or not an object.
#[derive(Debug)]
pub(crate) struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Obj<T> {
        Obj(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Obj<T>, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(a)).map(|t| Obj(Some(t)))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Obj<T>, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Obj<T>, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Obj(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A list field: its elements as `T` reads them; empty when it is absent or not an array, and
/// `present` says whether it was an array at all.
#[derive(Debug)]
pub(crate) struct List<T> {
    pub items: Vec<T>,
    pub present: bool,
}

impl<T> Default for List<T> {
    fn default() -> List<T> {
        List {
            items: Vec::new(),
            present: false,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<List<T>, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<List<T>, A::Error> {
                let mut items = Vec::with_capacity(a.size_hint().unwrap_or(0).min(1024));
                while let Some(t) = a.next_element::<T>()? {
                    items.push(t);
                }
                Ok(List {
                    items,
                    present: true,
                })
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<List<T>, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<List<T>, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(List::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<List<T>, E> {
                Ok(List::default())
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Reads `T` from an object value (borrowing its strings); `None` for anything but an object,
/// since serde would read a struct from an array too, field by position.
pub(crate) fn from_object<'a, T: Deserialize<'a>>(v: &'a serde_json::Value) -> Option<T> {
    T::deserialize(v.as_object().map(|_| v)?).ok()
}

/// [`from_object`] for an owned value: its strings are moved, not copied.
pub(crate) fn from_owned<T: DeserializeOwned>(v: serde_json::Value) -> Option<T> {
    if !v.is_object() {
        return None;
    }
    T::deserialize(v).ok()
}
