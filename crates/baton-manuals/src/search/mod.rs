//! Search: a question becomes a query plan (concepts, names, labels,
//! required terms, thesaurus spellings), each manual's index scores its
//! sections, the head is refined, reranked and spread over files, and the
//! claim graph is built from the top. Knows the corpus and everything below.

pub(crate) mod claims;
pub(crate) mod diversify;
pub(crate) mod query;
pub(crate) mod rerank;
pub(crate) mod rows;
pub(crate) mod scoring;
