package pbconv

// DecodeViaJSON is the JSON route of DecodeRequest, which its field-by-field
// conversion of plain requests must equal.
var DecodeViaJSON = decodeViaJSON
