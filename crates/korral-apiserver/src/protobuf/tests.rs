//! Tests of the protobuf decoder.
