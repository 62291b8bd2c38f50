//! Union arrays, sparse and dense: each row is a value of one of the
//! union's members, which its type id names. A row's encoding is that
//! type id as one byte, then its value's encoding, so that the same bytes
//! in two members (`"ab"` as either of two string members, or as a string
//! and as binary) are two values, as the union's readers (DuckDB's
//! `UNION`) hold them. A row whose value is null is null.

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::DataType;

use crate::{Error, ErrorKind};

/// The rows of a union array and the members they name.
pub(super) struct Union<'a> {
    type_ids: &'a [i8],
    /// A dense union's offset of each row's value in its member; a sparse
    /// union's members share its rows.
    offsets: Option<&'a [i32]>,
    /// Each member's array, at its type id; `None` where no member has that
    /// id.
    members: Vec<Option<&'a dyn Array>>,
}

impl<'a> Union<'a> {
    /// The rows and members of a union array; `None` for any other array.
    pub(super) fn of(array: &'a dyn Array) -> Option<Union<'a>> {
        let DataType::Union(fields, _) = array.data_type() else {
            return None;
        };
        let union = array.as_union_opt()?;
        let mut members = Vec::new();
        for (type_id, _) in fields.iter() {
            // Arrow's type ids are 0 to 127; arrow-rs keeps the declared
            // ones' members (its C data import asserts that every one has
            // its array).
            let at = usize::try_from(type_id).ok()?;
            if members.len() <= at {
                members.resize(at + 1, None);
            }
            members[at] = Some(union.child(type_id).as_ref());
        }
        Some(Union {
            type_ids: union.type_ids(),
            offsets: union.offsets().map(|offsets| &offsets[..]),
            members,
        })
    }

    /// The members' arrays, by type id (with gaps where no member has one).
    pub(super) fn members(&self) -> &[Option<&'a dyn Array>] {
        &self.members
    }

    /// The member at `type_id`, if the union has one.
    pub(super) fn member(&self, type_id: u8) -> Option<&'a dyn Array> {
        self.members.get(usize::from(type_id)).copied().flatten()
    }

    /// Row `row`'s type id and the index of its value in that member (of
    /// a union [`Union::check`] has found well formed).
    pub(super) fn value_of(&self, row: usize) -> (u8, usize) {
        let type_id = self.type_ids[row] as u8;
        match self.offsets {
            Some(offsets) => (type_id, offsets[row] as usize),
            None => (type_id, row),
        }
    }

    /// The error for a row whose type id names no member, or whose value
    /// lies past its member's (arrays from the C data interface are not
    /// validated, and arrow-rs's own accessors would panic on them).
    pub(super) fn check(&self) -> Result<(), Error> {
        let malformed = |problem: String| Err(ErrorKind::ArrowUnion { problem }.into());
        let rows = self.type_ids.len();
        if self.offsets.is_none() {
            for (type_id, member) in self.members.iter().enumerate() {
                let Some(member) = member else { continue };
                if member.len() < rows {
                    return malformed(format!(
                        "member {type_id} of the sparse union holds {} values, fewer than its \
                         {rows} rows",
                        member.len()
                    ));
                }
            }
        }
        for (row, &type_id) in self.type_ids.iter().enumerate() {
            let member = u8::try_from(type_id).ok().and_then(|id| self.member(id));
            let Some(member) = member else {
                return malformed(format!(
                    "row {row} has type id {type_id}, which names none of the union's members"
                ));
            };
            if let Some(offsets) = self.offsets {
                let offset = offsets[row];
                if usize::try_from(offset).is_err() || offset as usize >= member.len() {
                    return malformed(format!(
                        "row {row} is value {offset} of member {type_id}, which holds {} values",
                        member.len()
                    ));
                }
            }
        }
        Ok(())
    }
}
