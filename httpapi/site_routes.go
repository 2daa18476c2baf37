package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
)

// The operator's site routes, registered by fleetRoutes: create a site,
// rename it.

// createSiteRequest is the body of POST /v1/sites.
type createSiteRequest struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// siteResponse is a site as written.
type siteResponse struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Version  int64  `json:"version"`
	Position string `json:"position"`
}

func (f fleetHandlers) createSite(c echo.Context) error {
	var req createSiteRequest
	key, err := bindCreate(c, &req)
	if err != nil {
		return err
	}
	if err := requireFields("id", req.ID, "name", req.Name); err != nil {
		return err
	}
	res, err := f.h.CreateSite(c.Request().Context(), ActorOf(c), commands.CreateSite{ID: req.ID, Name: req.Name, IdempotencyKey: key})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, siteResponse{ID: res.ID, Name: res.Name, Version: res.Version, Position: res.Position.String()})
}

// updateSiteRequest is the body of PATCH /v1/sites/{id}: the new name.
type updateSiteRequest struct {
	Name string `json:"name"`
}

// updateSite renames a site. It takes an optional Idempotency-Key and an
// optional If-Match with the version the site must be at.
func (f fleetHandlers) updateSite(c echo.Context) error {
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	var req updateSiteRequest
	id, version, err := bindTarget(c, &req)
	if err != nil {
		return err
	}
	if err := requireFields("name", req.Name); err != nil {
		return err
	}
	res, err := f.h.UpdateSite(c.Request().Context(), ActorOf(c), commands.UpdateSite{
		ID: id, Name: req.Name, IfVersion: version, IdempotencyKey: key})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, siteResponse{ID: res.ID, Name: res.Name, Version: res.Version, Position: res.Position.String()})
}
