package pbconv

// DecodeViaJSON is the JSON route of DecodeRequest, which its field-by-field
// conversion of plain requests must equal.
var DecodeViaJSON = decodeViaJSON

// RawValue converts already-encoded JSON, as a part's data.
var RawValue = rawValue
