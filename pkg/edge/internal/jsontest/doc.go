// Package jsontest holds what the edge's tests and fuzz targets compare
// hand-written JSON parsers with: encoding/json's reading of the same
// bytes, and hostile nestings.
package jsontest
