// Package lwebreak attacks the ciphertexts of the lwe level (issue 50).
package lwebreak
