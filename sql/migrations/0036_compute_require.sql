-- +goose Up
-- compute_require(ok, message) fails the statement that calls it, and with
-- it the transaction, unless ok is true: SQLSTATE BC409, the message as
-- given. A batch that carries its COMMIT can check a condition on what its
-- earlier statements wrote without a round trip back to Go: a failed
-- condition aborts the transaction, so the COMMIT after it never commits
-- (PlacementConfirm, a create's first placement attempt).
-- +goose StatementBegin
CREATE FUNCTION compute_require(ok boolean, message text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = 'BC409', MESSAGE = message;
  END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION compute_require(boolean, text);
